"""Loopback-only DDS configurations, shared by the ROS 2 tests
(tests/ros2/conftest.py), rmw_nerve's mixed test (tests/rmw) and the
ROS 2 latency benchmark (bench/ros2/run.py).

Cyclone DDS (CYCLONEDDS_URI): 127.0.0.1 only, multicast off, unicast
discovery to 127.0.0.1. Fast DDS (FASTRTPS_DEFAULT_PROFILES_FILE): a UDP
transport filtered to 127.0.0.1, no built-in transports (no shared
memory), 127.0.0.1 as initial peer; FASTDDS_XML takes the interface
filter of the Fast DDS version as {filter}."""

CYCLONE_XML = """<CycloneDDS><Domain id="any"><General>
<Interfaces><NetworkInterface address="127.0.0.1"/></Interfaces>
<AllowMulticast>false</AllowMulticast></General>
<Discovery><Peers><Peer address="127.0.0.1"/></Peers>
<ParticipantIndex>auto</ParticipantIndex><MaxAutoParticipantIndex>30</MaxAutoParticipantIndex>
</Discovery></Domain></CycloneDDS>
"""

# Fast DDS 2.14 (Jazzy) names the interface filter interfaceWhiteList;
# Fast DDS 3 (Kilted) replaced it with interfaces/allowlist. Both pin the
# locators to 127.0.0.1, which alone keeps multicast off.
FASTDDS_XML = """<?xml version="1.0" encoding="UTF-8" ?>
<profiles xmlns="http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles">
  <transport_descriptors>
    <transport_descriptor>
      <transport_id>udp_lo</transport_id>
      <type>UDPv4</type>
      {filter}
      <maxInitialPeersRange>30</maxInitialPeersRange>
    </transport_descriptor>
  </transport_descriptors>
  <participant profile_name="nerve_lo" is_default_profile="true">
    <rtps>
      <userTransports><transport_id>udp_lo</transport_id></userTransports>
      <useBuiltinTransports>false</useBuiltinTransports>
      <builtin>
        <metatrafficUnicastLocatorList>
          <locator><udpv4><address>127.0.0.1</address></udpv4></locator>
        </metatrafficUnicastLocatorList>
        <initialPeersList>
          <locator><udpv4><address>127.0.0.1</address></udpv4></locator>
        </initialPeersList>
      </builtin>
      <defaultUnicastLocatorList>
        <locator><udpv4><address>127.0.0.1</address></udpv4></locator>
      </defaultUnicastLocatorList>
    </rtps>
  </participant>
</profiles>
"""
# The interface filter by Fast DDS major version, and by ROS 2 distro.
FASTDDS_FILTERS = {
    "2": "<interfaceWhiteList><address>127.0.0.1</address></interfaceWhiteList>",
    "3": '<interfaces><allowlist><interface name="127.0.0.1"/></allowlist></interfaces>',
}
FILTERS = {"jazzy": FASTDDS_FILTERS["2"], "kilted": FASTDDS_FILTERS["3"]}

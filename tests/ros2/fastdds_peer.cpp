// A ROS 2 node written directly on Fast DDS's C++ API (Debian's Fast DDS
// 2.9), for the nerve ros2 tests (test_ros2_peers.py): ROS 2's DDS names
// (topic rt/<name>, type pkg::msg::dds_::Name_), its default QoS
// (reliable, volatile, keep last 10) and CDR payloads handled as bytes, so
// that the test compares exactly what crossed the wire.
//
//   fastdds_peer pub TOPIC DDSTYPE DIR N   publish DIR/<i>.cdr, i = 0..N-1
//   fastdds_peer sub TOPIC DDSTYPE DIR N   write each sample to DIR/<i>.cdr
//
// The network setup comes from the XML profile that
// FASTRTPS_DEFAULT_PROFILES_FILE names (the tests: loopback only). Prints
// READY once matched, then one JSON line. Every wait is bounded (90 s in
// all, for a loaded host). A publisher with NERVE_PEER_GO=FILE in its
// environment waits for FILE before it writes (the test creates it once
// the bridge's reader has matched this writer too).

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include <fastdds/dds/domain/DomainParticipant.hpp>
#include <fastdds/dds/domain/DomainParticipantFactory.hpp>
#include <fastdds/dds/publisher/DataWriter.hpp>
#include <fastdds/dds/publisher/Publisher.hpp>
#include <fastdds/dds/subscriber/DataReader.hpp>
#include <fastdds/dds/subscriber/SampleInfo.hpp>
#include <fastdds/dds/subscriber/Subscriber.hpp>
#include <fastdds/dds/topic/TopicDataType.hpp>

#include "fastdds_raw.hpp"

using namespace eprosima::fastdds::dds;
using eprosima::fastrtps::rtps::InstanceHandle_t;
using eprosima::fastrtps::rtps::SerializedPayload_t;

namespace {

using nerve_fastdds::Bytes;
using nerve_fastdds::RawCdr;

Bytes read_file(const std::string &path)
{
    std::ifstream f(path, std::ios::binary);
    return Bytes(std::istreambuf_iterator<char>(f), {});
}

// The QoS both ends (DataWriterQos, DataReaderQos) share: reliable,
// volatile, keep last 10, history memory allocated as needed.
template <class Qos> void end_qos(Qos &q)
{
    q.reliability().kind = RELIABLE_RELIABILITY_QOS;
    q.durability().kind = VOLATILE_DURABILITY_QOS;
    q.history().kind = KEEP_LAST_HISTORY_QOS;
    q.history().depth = 10;
    q.endpoint().history_memory_policy =
        eprosima::fastrtps::rtps::DYNAMIC_RESERVE_MEMORY_MODE;
}

} // namespace

int main(int argc, char **argv)
{
    if (argc != 6) {
        std::fprintf(stderr,
                     "usage: fastdds_peer pub|sub TOPIC DDSTYPE DIR N\n");
        return 2;
    }
    const bool pub = std::strcmp(argv[1], "pub") == 0;
    const std::string topic = std::string("rt") + argv[2];
    const std::string dir = argv[4];
    const int n = std::atoi(argv[5]);
    const char *dom = std::getenv("ROS_DOMAIN_ID");
    auto *factory = DomainParticipantFactory::get_instance();
    DomainParticipant *pp = factory->create_participant(
        dom ? std::atoi(dom) : 0, PARTICIPANT_QOS_DEFAULT);
    if (pp == nullptr) {
        std::fprintf(stderr, "fastdds_peer: no participant\n");
        return 1;
    }
    TypeSupport type(new RawCdr(argv[3]));
    type.register_type(pp);
    Topic *tp = pp->create_topic(topic, argv[3], TOPIC_QOS_DEFAULT);
    const auto end =
        std::chrono::steady_clock::now() + std::chrono::seconds(90);
    bool matched = false;
    int rc = 0;
    if (pub) {
        Publisher *p = pp->create_publisher(PUBLISHER_QOS_DEFAULT);
        DataWriterQos q = DATAWRITER_QOS_DEFAULT;
        end_qos(q);
        q.publish_mode().kind = ASYNCHRONOUS_PUBLISH_MODE;
        DataWriter *w = p->create_datawriter(tp, q);
        while (!matched && std::chrono::steady_clock::now() < end) {
            PublicationMatchedStatus st;
            matched = w->get_publication_matched_status(st) ==
                          ReturnCode_t::RETCODE_OK &&
                      st.current_count > 0;
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        std::printf("%s\n", matched ? "READY" : "UNMATCHED");
        std::fflush(stdout);
        const char *go = std::getenv("NERVE_PEER_GO");
        while (matched && go != nullptr && access(go, F_OK) != 0) {
            if (std::chrono::steady_clock::now() >= end) {
                std::fprintf(stderr, "fastdds_peer: %s never appeared\n", go);
                matched = false;
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        for (int i = 0; i < n && matched; i++) {
            Bytes b = read_file(dir + "/" + std::to_string(i) + ".cdr");
            if (!w->write(&b)) {
                rc = 1;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        eprosima::fastrtps::Duration_t ack(10, 0);
        if (matched &&
            w->wait_for_acknowledgments(ack) != ReturnCode_t::RETCODE_OK) {
            rc = 1;
        }
        std::printf("{\"written\": %d, \"matched\": %s}\n", matched ? n : 0,
                    matched ? "true" : "false");
        p->delete_datawriter(w);
        pp->delete_publisher(p);
    } else {
        Subscriber *s = pp->create_subscriber(SUBSCRIBER_QOS_DEFAULT);
        DataReaderQos q = DATAREADER_QOS_DEFAULT;
        end_qos(q);
        DataReader *r = s->create_datareader(tp, q);
        while (!matched && std::chrono::steady_clock::now() < end) {
            SubscriptionMatchedStatus st;
            matched = r->get_subscription_matched_status(st) ==
                          ReturnCode_t::RETCODE_OK &&
                      st.current_count > 0;
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
        std::printf("%s\n", matched ? "READY" : "UNMATCHED");
        std::fflush(stdout);
        int got = 0;
        while (got < n && std::chrono::steady_clock::now() < end) {
            Bytes b;
            SampleInfo info;
            if (r->take_next_sample(&b, &info) == ReturnCode_t::RETCODE_OK) {
                if (info.valid_data) {
                    std::ofstream f(dir + "/" + std::to_string(got++) + ".cdr",
                                    std::ios::binary);
                    f.write(reinterpret_cast<const char *>(b.data()),
                            static_cast<std::streamsize>(b.size()));
                }
            } else {
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
            }
        }
        std::printf("{\"n\": %d}\n", got);
        s->delete_datareader(r);
        pp->delete_subscriber(s);
    }
    pp->delete_topic(tp);
    factory->delete_participant(pp);
    return rc;
}

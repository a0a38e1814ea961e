// A ROS 2 service client written on Fast DDS's C++ API, as rmw_fastrtps_cpp
// makes one, but with the type hash its request writer says given on the
// command line: the peer of tests/rmw/test_rmw_services.py for the type
// hash check of `nerve ros2 --services` (rclpy cannot claim another hash).
//
//   fastdds_srv_client SERVICE DDSTYPE HASH REQUEST_HEX
//
// SERVICE "/a/b", DDSTYPE "pkg::srv::dds_::Name" (the request and the reply
// types are DDSTYPE_Request_ / DDSTYPE_Response_), HASH "RIHS01_..." and the
// request's CDR bytes in hex. It waits (bounded) for its writer and reader
// to match, prints "ready", waits for the file $NERVE_PEER_GO, sends one
// request with the related sample identity of rmw_fastrtps (its reply
// reader's GUID), waits for the reply that names it (5 s at most; with
// $NERVE_PEER_NO_REPLY set only until the request is acknowledged), and
// prints {"matched": ..., "replies": N}.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include <unistd.h>

#include <fastdds/dds/domain/DomainParticipant.hpp>
#include <fastdds/dds/domain/DomainParticipantFactory.hpp>
#include <fastdds/dds/publisher/DataWriter.hpp>
#include <fastdds/dds/publisher/Publisher.hpp>
#include <fastdds/dds/subscriber/DataReader.hpp>
#include <fastdds/dds/subscriber/SampleInfo.hpp>
#include <fastdds/dds/subscriber/Subscriber.hpp>
#include <fastdds/rtps/common/WriteParams.h>

#include "fastdds_raw.hpp"

using namespace eprosima::fastdds::dds;
using eprosima::fastrtps::rtps::WriteParams;
using nerve_fastdds::Bytes;
using nerve_fastdds::RawCdr;
using Clock = std::chrono::steady_clock;

namespace {

template <class Qos> void service_qos(Qos &q, const std::string &ud)
{
    q.reliability().kind = RELIABLE_RELIABILITY_QOS;
    q.durability().kind = VOLATILE_DURABILITY_QOS;
    q.history().kind = KEEP_LAST_HISTORY_QOS;
    q.history().depth = 10;
    q.endpoint().history_memory_policy =
        eprosima::fastrtps::rtps::DYNAMIC_REUSABLE_MEMORY_MODE;
    q.user_data().data_vec(
        std::vector<eprosima::fastrtps::rtps::octet>(ud.begin(), ud.end()));
}

Bytes unhex(const std::string &h)
{
    Bytes b;
    for (size_t i = 0; i + 1 < h.size(); i += 2) {
        b.push_back(static_cast<unsigned char>(
            std::stoul(h.substr(i, 2), nullptr, 16)));
    }
    return b;
}

} // namespace

int main(int argc, char **argv)
{
    if (argc != 5) {
        std::fprintf(stderr, "usage: fastdds_srv_client SERVICE DDSTYPE HASH "
                             "REQUEST_HEX\n");
        return 2;
    }
    const std::string svc = argv[1], base = argv[2];
    const std::string ud = std::string("typehash=") + argv[3] + ";";
    const char *dom = std::getenv("ROS_DOMAIN_ID");
    auto *factory = DomainParticipantFactory::get_instance();
    DomainParticipant *pp = factory->create_participant(
        dom ? std::atoi(dom) : 0, PARTICIPANT_QOS_DEFAULT);
    if (pp == nullptr) {
        std::fprintf(stderr, "fastdds_srv_client: no participant\n");
        return 1;
    }
    TypeSupport tq(new RawCdr(base + "_Request_"));
    TypeSupport tr(new RawCdr(base + "_Response_"));
    tq.register_type(pp);
    tr.register_type(pp);
    Topic *rq = pp->create_topic("rq" + svc + "Request", base + "_Request_",
                                 TOPIC_QOS_DEFAULT);
    Topic *rr = pp->create_topic("rr" + svc + "Reply", base + "_Response_",
                                 TOPIC_QOS_DEFAULT);
    Publisher *pub = pp->create_publisher(PUBLISHER_QOS_DEFAULT);
    Subscriber *sub = pp->create_subscriber(SUBSCRIBER_QOS_DEFAULT);
    DataWriterQos wq = DATAWRITER_QOS_DEFAULT;
    DataReaderQos rdq = DATAREADER_QOS_DEFAULT;
    service_qos(wq, ud);
    service_qos(rdq, ud);
    DataWriter *w = pub->create_datawriter(rq, wq);
    DataReader *r = sub->create_datareader(rr, rdq);
    const auto end = Clock::now() + std::chrono::seconds(90);
    bool matched = false;
    while (!matched && Clock::now() < end) {
        PublicationMatchedStatus ps;
        SubscriptionMatchedStatus ss;
        matched =
            w->get_publication_matched_status(ps) == ReturnCode_t::RETCODE_OK &&
            r->get_subscription_matched_status(ss) ==
                ReturnCode_t::RETCODE_OK &&
            ps.current_count > 0 && ss.current_count > 0;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::printf("%s\n", matched ? "ready" : "unmatched");
    std::fflush(stdout);
    const char *go = std::getenv("NERVE_PEER_GO");
    while (matched && go != nullptr && access(go, F_OK) != 0 &&
           Clock::now() < end) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    int replies = 0;
    if (matched) {
        Bytes req = unhex(argv[4]);
        WriteParams wp;
        wp.related_sample_identity().writer_guid(r->guid());
        if (!w->write(&req, wp)) {
            std::fprintf(stderr, "fastdds_srv_client: write failed\n");
        }
        const auto seq = wp.sample_identity().sequence_number();
        // With NERVE_PEER_NO_REPLY (a request the test expects refused):
        // only until the request is acknowledged (delivered).
        const bool no_reply = std::getenv("NERVE_PEER_NO_REPLY") != nullptr;
        if (no_reply) {
            (void)w->wait_for_acknowledgments(
                eprosima::fastrtps::Duration_t(10, 0));
        }
        const auto stop = Clock::now() + std::chrono::seconds(no_reply ? 0 : 5);
        while (replies == 0 && Clock::now() < stop) {
            Bytes b;
            SampleInfo info;
            if (r->take_next_sample(&b, &info) == ReturnCode_t::RETCODE_OK) {
                replies +=
                    info.valid_data &&
                    info.related_sample_identity.writer_guid() == r->guid() &&
                    info.related_sample_identity.sequence_number() == seq;
            } else {
                std::this_thread::sleep_for(std::chrono::milliseconds(10));
            }
        }
    }
    std::printf("{\"matched\": %s, \"replies\": %d}\n",
                matched ? "true" : "false", replies);
    pp->delete_contained_entities();
    factory->delete_participant(pp);
    return 0;
}

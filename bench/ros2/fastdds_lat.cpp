// One-way latency over Fast DDS (Debian's 2.9) without rclpy, for the ROS
// 2 latency table (bench/ros2/run.py): ROS 2 names and QoS (reliable,
// volatile, keep last 10), CDR blobs as bytes (tools/ros2/fastdds_raw.hpp).
//
//   fastdds_lat pub TOPIC DDSTYPE SIZE N HZ [ds]
//   fastdds_lat sub TOPIC DDSTYPE N [ds SIZE]
//
// "ds": data-sharing delivery (Fast DDS's shared-memory path that skips the
// transport), as its documentation sets it up for large data: data sharing
// ON (creation fails rather than fall back), a bounded type (SIZE bytes),
// preallocated history, resource limits of the history depth. Without
// "ds" data sharing is OFF and the XML profile picks the transport (UDP or
// SHM, run.py).
//
// Latency = CLOCK_REALTIME at take - the sample's source timestamp (set by
// the writer at write). The network setup comes from the XML profile of
// FASTRTPS_DEFAULT_PROFILES_FILE (run.py: UDP on loopback, no shared
// memory). The sub prints READY, then one JSON line.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include <sys/resource.h>

#include <fastdds/dds/domain/DomainParticipant.hpp>
#include <fastdds/dds/domain/DomainParticipantFactory.hpp>
#include <fastdds/dds/publisher/DataWriter.hpp>
#include <fastdds/dds/publisher/Publisher.hpp>
#include <fastdds/dds/subscriber/DataReader.hpp>
#include <fastdds/dds/subscriber/SampleInfo.hpp>
#include <fastdds/dds/subscriber/Subscriber.hpp>

#include "fastdds_raw.hpp"

using namespace eprosima::fastdds::dds;
using nerve_fastdds::Bytes;
using nerve_fastdds::RawCdr;

namespace {

int64_t realtime_ns()
{
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

double cpu_s()
{
    rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
           1e-6 * double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

// RawCdr with a bound: data sharing needs one (its pool holds samples of
// at most m_typeSize bytes, in a file mapped by writer and readers).
class BoundedRawCdr : public RawCdr {
public:
    BoundedRawCdr(const std::string &name, uint32_t size) : RawCdr(name)
    {
        m_typeSize = size;
    }
    bool is_bounded() const override
    {
        return true;
    }
};

template <class Q> void data_sharing(Q &q, bool on)
{
    if (!on) {
        q.data_sharing().off();
        return;
    }
    q.data_sharing().on("");
    q.endpoint().history_memory_policy =
        eprosima::fastrtps::rtps::PREALLOCATED_MEMORY_MODE;
    q.resource_limits().max_instances = 1;
    q.resource_limits().max_samples = 10;
    q.resource_limits().max_samples_per_instance = 10;
    q.resource_limits().allocated_samples = 10;
}

} // namespace

int main(int argc, char **argv)
{
    if (argc < 5) {
        std::fprintf(stderr, "usage: see bench/ros2/fastdds_lat.cpp\n");
        return 2;
    }
    const bool pub = std::strcmp(argv[1], "pub") == 0;
    const char *dom = std::getenv("ROS_DOMAIN_ID");
    auto *factory = DomainParticipantFactory::get_instance();
    DomainParticipant *pp = factory->create_participant(
        dom ? std::atoi(dom) : 0, PARTICIPANT_QOS_DEFAULT);
    if (pp == nullptr) {
        return 1;
    }
    const bool ds = (pub && argc == 8 && std::strcmp(argv[7], "ds") == 0) ||
                    (!pub && argc == 7 && std::strcmp(argv[5], "ds") == 0);
    const uint32_t bound =
        pub ? uint32_t(std::strtoul(argv[4], nullptr, 10))
            : (argc == 7 ? uint32_t(std::strtoul(argv[6], nullptr, 10)) : 0);
    TypeSupport type(ds ? new BoundedRawCdr(argv[3], bound)
                        : new RawCdr(argv[3]));
    type.register_type(pp);
    Topic *tp = pp->create_topic(std::string("rt") + argv[2], argv[3],
                                 TOPIC_QOS_DEFAULT);
    if (pub && (argc == 7 || (argc == 8 && ds))) {
        const size_t size = std::strtoull(argv[4], nullptr, 10);
        const int n = std::atoi(argv[5]), hz = std::atoi(argv[6]);
        Publisher *p = pp->create_publisher(PUBLISHER_QOS_DEFAULT);
        DataWriterQos q = DATAWRITER_QOS_DEFAULT;
        q.reliability().kind = RELIABLE_RELIABILITY_QOS;
        q.history().kind = KEEP_LAST_HISTORY_QOS;
        q.history().depth = 10;
        q.endpoint().history_memory_policy =
            eprosima::fastrtps::rtps::DYNAMIC_RESERVE_MEMORY_MODE;
        q.publish_mode().kind = ASYNCHRONOUS_PUBLISH_MODE;
        data_sharing(q, ds);
        DataWriter *w = p->create_datawriter(tp, q);
        if (w == nullptr) {
            std::fprintf(stderr, "fastdds_lat: no DataWriter\n");
            return 1;
        }
        Bytes b(size, 0);
        b[1] = 1;
        std::this_thread::sleep_for(std::chrono::seconds(2)); // discovery
        auto next = std::chrono::steady_clock::now();
        for (int i = 0; i < n; i++) {
            w->write(&b);
            next += std::chrono::nanoseconds(1000000000 / hz);
            std::this_thread::sleep_until(next);
        }
        w->wait_for_acknowledgments(eprosima::fastrtps::Duration_t(5, 0));
        p->delete_datawriter(w);
        pp->delete_publisher(p);
    } else if (!pub && (argc == 5 || (argc == 7 && ds))) {
        const int want = std::atoi(argv[4]);
        Subscriber *s = pp->create_subscriber(SUBSCRIBER_QOS_DEFAULT);
        DataReaderQos q = DATAREADER_QOS_DEFAULT;
        q.reliability().kind = RELIABLE_RELIABILITY_QOS;
        q.history().kind = KEEP_LAST_HISTORY_QOS;
        q.history().depth = 10;
        q.endpoint().history_memory_policy =
            eprosima::fastrtps::rtps::DYNAMIC_RESERVE_MEMORY_MODE;
        data_sharing(q, ds);
        DataReader *r = s->create_datareader(tp, q);
        if (r == nullptr) {
            std::fprintf(stderr, "fastdds_lat: no DataReader\n");
            return 1;
        }
        std::printf("READY\n");
        std::fflush(stdout);
        std::vector<int64_t> lat;
        const double cpu0 = cpu_s();
        const auto end =
            std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (int(lat.size()) < want &&
               std::chrono::steady_clock::now() < end) {
            if (!r->wait_for_unread_message(
                    eprosima::fastrtps::Duration_t(0, 500000000))) {
                continue;
            }
            Bytes b;
            SampleInfo info;
            while (int(lat.size()) < want &&
                   r->take_next_sample(&b, &info) == ReturnCode_t::RETCODE_OK) {
                if (info.valid_data) {
                    const auto &t = info.source_timestamp;
                    lat.push_back(realtime_ns() -
                                  (int64_t(t.seconds()) * 1000000000 +
                                   int64_t(t.nanosec())));
                }
            }
        }
        const double cpu = cpu_s() - cpu0;
        std::sort(lat.begin(), lat.end());
        const size_t k = lat.size();
        if (k == 0) {
            std::printf("{\"n\": 0, \"want\": %d, \"cpu_s\": %.3f}\n", want,
                        cpu);
        } else {
            std::printf("{\"n\": %zu, \"want\": %d, \"p50_us\": %.1f, "
                        "\"p99_us\": %.1f, "
                        "\"max_us\": %.1f, \"cpu_s\": %.3f}\n",
                        k, want, lat[k / 2] / 1e3, lat[k * 99 / 100] / 1e3,
                        lat[k - 1] / 1e3, cpu);
        }
        s->delete_datareader(r);
        pp->delete_subscriber(s);
    } else {
        std::fprintf(stderr, "usage: see bench/ros2/fastdds_lat.cpp\n");
        return 2;
    }
    pp->delete_topic(tp);
    factory->delete_participant(pp);
    return 0;
}

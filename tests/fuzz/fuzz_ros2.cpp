// Fuzz harness of the ROS 2 CDR decoder (include/nerve/cxx/ros2.hpp).
//
// The first input byte picks a message type, the rest is the payload
// (encapsulation header included). A payload that decodes must re-encode
// to bytes that decode and re-encode to the same bytes, and the view twin
// must read
// the same bytes to the same encoding; any other outcome must be
// NERVE_EDECODE. An out-of-bounds read is for the sanitizers to see; a
// broken invariant aborts.
//
// Built two ways: with -DNERVE_FUZZ_MAIN, a libFuzzer target
// (nerve_fuzz_ros2, make test-fuzz); without, a replay of a corpus
// directory (ros2_fuzz_replay, label unit: also run under ASan+UBSan).
#include <nerve/ros2/nerve_test_msgs/msg/all_kinds.hpp>
#include <nerve/ros2/nerve_test_msgs/msg/blob.hpp>
#include <nerve/ros2/nerve_test_msgs/msg/w_strings.hpp>
#include <nerve/ros2/diagnostic_msgs/msg/diagnostic_array.hpp>
#include <nerve/ros2/nav_msgs/msg/odometry.hpp>
#include <nerve/ros2/sensor_msgs/msg/imu.hpp>
#include <nerve/ros2/sensor_msgs/msg/joint_state.hpp>
#include <nerve/ros2/sensor_msgs/msg/point_cloud2.hpp>

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

namespace ntm = nerve::ros2::nerve_test_msgs::msg;
namespace sm = nerve::ros2::sensor_msgs::msg;

template <class T, class V> void one(const uint8_t *p, size_t n)
{
    T m;
    const int rc = nerve::ros2::decode(p, n, m);
    V v;
    const int vrc = nerve::ros2::decode(p, n, v);
    if (rc != vrc || (rc != 0 && rc != NERVE_EDECODE)) {
        std::abort();
    }
    if (rc != 0) {
        return;
    }
    const size_t len = nerve::ros2::encoded_size(m);
    // decode() accepts only what fits its bounds. (The encoding may be
    // longer than the input: a string of length 0 reads as "", which is
    // written back with its NUL.)
    if (len == SIZE_MAX) {
        std::abort();
    }
    const std::vector<uint8_t> b = nerve::ros2::encode(m);
    T again;
    // Bytes, not ==: a NaN field is not equal to itself.
    if (nerve::ros2::decode(b.data(), b.size(), again) != 0 ||
        nerve::ros2::encode(again) != b) {
        std::abort();
    }
    if (nerve::ros2::encode(v) != b) {
        std::abort();
    }
}

} // namespace

extern "C" int nerve_fuzz_ros2_one(const uint8_t *data, size_t size)
{
    if (size == 0) {
        return 0;
    }
    const uint8_t *p = data + 1;
    const size_t n = size - 1;
    switch (data[0] % 8) {
    case 0: one<ntm::AllKinds, ntm::AllKinds>(p, n); break;
    case 1: one<ntm::WStrings, ntm::WStrings>(p, n); break;
    case 2: one<ntm::Blob, ntm::BlobView>(p, n); break;
    case 3: one<sm::PointCloud2, sm::PointCloud2View>(p, n); break;
    case 4: one<sm::Imu, sm::Imu>(p, n); break;
    case 5: one<sm::JointState, sm::JointState>(p, n); break;
    case 6:
        one<nerve::ros2::nav_msgs::msg::Odometry,
            nerve::ros2::nav_msgs::msg::Odometry>(p, n);
        break;
    default:
        one<nerve::ros2::diagnostic_msgs::msg::DiagnosticArray,
            nerve::ros2::diagnostic_msgs::msg::DiagnosticArray>(p, n);
        break;
    }
    return 0;
}

#ifdef NERVE_FUZZ_MAIN
extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return nerve_fuzz_ros2_one(data, size);
}
#else
#include <dirent.h>

#include <string>

// ros2_fuzz_replay DIR: every file of DIR through the harness; also every
// truncation of each (the cheap half of what the fuzzer tries).
int main(int argc, char **argv)
{
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
        return 2;
    }
    DIR *d = opendir(argv[1]);
    if (d == nullptr) {
        std::perror(argv[1]);
        return 1;
    }
    int files = 0;
    while (struct dirent *e = readdir(d)) {
        if (e->d_name[0] == '.') {
            continue;
        }
        const std::string path = std::string(argv[1]) + "/" + e->d_name;
        FILE *f = std::fopen(path.c_str(), "rb");
        if (f == nullptr) {
            std::perror(path.c_str());
            return 1;
        }
        std::vector<uint8_t> b;
        int c;
        while ((c = std::fgetc(f)) != EOF) {
            b.push_back(static_cast<uint8_t>(c));
        }
        std::fclose(f);
        for (size_t cut = 0; cut <= b.size(); cut++) {
            std::vector<uint8_t> part(b.begin(),
                                      b.begin() + static_cast<long>(cut));
            nerve_fuzz_ros2_one(part.data(), part.size());
        }
        files++;
    }
    closedir(d);
    std::printf("ros2_fuzz_replay: %d files and their truncations ok\n", files);
    return files > 0 ? 0 : 1;
}
#endif

// ros2types_peer: the C++ side of the ROS 2 message type tests
// (tests/ros2types/test_ros2_types.py). It reads lines "TYPE HEX" on stdin, one
// CDR message each, and answers one line per message:
//
//   OK <hex> <mask> <view>   the message decoded; <hex> is nerve's encoding
//                            of what it decoded, <mask> has "ff" where that
//                            encoding has padding and "00" elsewhere, and
//                            <view> is "same" when the view twin (the type
//                            itself if it has none) decodes and re-encodes
//                            to the same bytes, "diff" otherwise
//   ERR <code>               it did not decode (NERVE_EDECODE expected)
//   UNKNOWN                  no generated type has that name
//
// A line "SCHEMA TYPE" is answered "OK <hex>" with the hex of the type's
// definition (what a channel of it records as its schema), and a line
// "DEFAULT TYPE" "OK <hex>" with nerve's encoding of a default-constructed
// TYPE (its fields' defaults).
// Python compares these bytes with rosbags' and rclpy's.
#include <nerve/ros2/nerve_ros2_types.hpp>
#include <nerve/ros2/nerve_test_msgs.hpp>

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

namespace {

std::string hex(const std::vector<uint8_t> &b)
{
    static const char d[] = "0123456789abcdef";
    std::string s;
    s.reserve(b.size() * 2);
    for (uint8_t c : b) {
        s += d[c >> 4];
        s += d[c & 15];
    }
    return s;
}

bool unhex(const std::string &s, std::vector<uint8_t> &out)
{
    if (s.size() % 2 != 0) {
        return false;
    }
    out.resize(s.size() / 2);
    for (size_t i = 0; i < out.size(); i++) {
        unsigned v = 0;
        if (std::sscanf(s.c_str() + 2 * i, "%2x", &v) != 1) {
            return false;
        }
        out[i] = static_cast<uint8_t>(v);
    }
    return true;
}

template <class T, uint8_t Pad> std::vector<uint8_t> enc(const T &m)
{
    std::vector<uint8_t> b(nerve::ros2::encoded_size(m));
    nerve::ros2::encode<T, Pad>(m, b.data(), b.size());
    return b;
}

struct Schema {
    std::string out;
    template <class T, class V> void operator()(T *, V *)
    {
        const std::string d = nerve::ros2::MessageTraits<T>::definition;
        out = "OK " + hex(std::vector<uint8_t>(d.begin(), d.end()));
    }
};

struct Default {
    std::string out;
    template <class T, class V> void operator()(T *, V *)
    {
        out = "OK " + hex(enc<T, 0>(T{}));
    }
};

struct Answer {
    const std::vector<uint8_t> &in;
    std::string out;

    template <class T, class V> void operator()(T *, V *)
    {
        T m;
        int rc = nerve::ros2::decode(in.data(), in.size(), m);
        if (rc != 0) {
            out = "ERR " + std::string(nerve_err_name(rc));
            return;
        }
        if (nerve::ros2::encoded_size(m) == SIZE_MAX) {
            out = "ERR over-bound";
            return;
        }
        const auto zero = enc<T, 0>(m);
        const auto ones = enc<T, 0xff>(m);
        std::vector<uint8_t> mask(zero.size());
        for (size_t i = 0; i < zero.size(); i++) {
            mask[i] = zero[i] != ones[i] ? 0xff : 0;
        }
        V v;
        const bool view_ok =
            nerve::ros2::decode(in.data(), in.size(), v) == 0 &&
            enc<V, 0>(v) == zero;
        out =
            "OK " + hex(zero) + " " + hex(mask) + (view_ok ? " same" : " diff");
    }
};

} // namespace

int main()
{
    std::ios::sync_with_stdio(false);
    std::string line;
    while (std::getline(std::cin, line)) {
        const size_t sp = line.find(' ');
        const std::string type = line.substr(0, sp);
        if (type == "SCHEMA" && sp != std::string::npos) {
            Schema sc;
            const std::string t = line.substr(sp + 1);
            if (!nerve::ros2::nerve_ros2_types::with_type(t, sc) &&
                !nerve::ros2::nerve_test_msgs::with_type(t, sc)) {
                sc.out = "UNKNOWN";
            }
            std::cout << sc.out << '\n';
            continue;
        }
        if (type == "DEFAULT" && sp != std::string::npos) {
            Default d;
            const std::string t = line.substr(sp + 1);
            if (!nerve::ros2::nerve_ros2_types::with_type(t, d) &&
                !nerve::ros2::nerve_test_msgs::with_type(t, d)) {
                d.out = "UNKNOWN";
            }
            std::cout << d.out << '\n';
            continue;
        }
        std::vector<uint8_t> in;
        if (sp == std::string::npos || !unhex(line.substr(sp + 1), in)) {
            std::cout << "BADLINE\n";
            continue;
        }
        Answer a{in, {}};
        if (!nerve::ros2::nerve_ros2_types::with_type(type, a) &&
            !nerve::ros2::nerve_test_msgs::with_type(type, a)) {
            a.out = "UNKNOWN";
        }
        std::cout << a.out << '\n';
    }
    return 0;
}

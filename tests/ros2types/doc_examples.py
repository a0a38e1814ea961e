"""The C++ examples of docs/ros2.md's "ROS 2 message types" section, built
and run twice each, as a user pastes them into a program (issue 38: the
first failed on its second run, `create: a channel of this name exists`,
and `pub->publish(m);` alone warned).

Each ```cpp block becomes a program: its #include and namespace lines at
file scope, the rest as main()'s body, after a prelude with what the
examples leave to the reader (a point cloud's bytes `buf`/`len`,
`process()`, `fill_from_camera()`). It is compiled with -Wall -Wextra
-Werror, must exit 0 and print nothing on stderr, twice in a row (a
restarted program comes back to its channels). Channel names ("a.b") get
the test's prefix; the channels are removed at the end.

usage: doc_examples.py SRC_DIR CXX INCLUDE_DIR... -- LINK_ARG...
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

PRELUDE = """\
#include <nerve/nerve.hpp>
#include <nerve/ros2/nerve_ros2_types.hpp>

#include <cstdint>
#include <cstdio>
#include <vector>

namespace sm = nerve::ros2::sensor_msgs::msg;

// What the examples leave to the reader.
[[maybe_unused]] static std::vector<uint8_t> cloud(5 * 12, 7);
[[maybe_unused]] static const uint8_t *buf = cloud.data();
[[maybe_unused]] static size_t len = cloud.size();
[[maybe_unused]] static void process(const uint8_t *p, size_t n)
{
    if (n != len || p[0] != 7) {
        std::fprintf(stderr, "process: %zu bytes, first %u\\n", n, unsigned(p[0]));
    }
}
[[maybe_unused]] static void fill_from_camera(uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        p[i] = uint8_t(i);
    }
}
"""


def blocks(doc: str) -> list[str]:
    """The ```cpp blocks of the section "## ROS 2 message types"."""
    m = re.search(r"^## ROS 2 message types\n(.*?)(?=^## )", doc, re.S | re.M)
    assert m, "docs/ros2.md has no section '## ROS 2 message types'"
    return re.findall(r"^```cpp\n(.*?)^```", m.group(1), re.S | re.M)


def program(block: str, prefix: str, names: set[str]) -> str:
    head, body = [], []
    for line in block.splitlines():
        (head if line.startswith(("#include", "namespace ")) else body).append(line)

    def rename(mt: re.Match) -> str:
        names.add(prefix + mt.group(1))
        return f'"{prefix}{mt.group(1)}"'

    text = re.sub(r'"([a-z_]+\.[a-z_]+)"', rename, "\n".join(body))
    head = [h for h in head if h not in PRELUDE]
    return PRELUDE + "\n".join(head) + "\n\nint main()\n{\n" + text + "\n    return 0;\n}\n"


def main() -> int:
    args = sys.argv[1:]
    sep = args.index("--")
    src, cxx, incs, libs = Path(args[0]), args[1], args[2:sep], args[sep + 1:]
    found = blocks((src / "docs" / "ros2.md").read_text())
    if len(found) < 3:
        print(f"FAIL: {len(found)} C++ examples found in docs/ros2.md, want at least 3")
        return 1
    prefix = f"nt-{os.getpid()}-doc-"
    names: set[str] = set()
    fails = 0
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for i, block in enumerate(found):
                cpp = Path(tmp) / f"example{i}.cpp"
                exe = Path(tmp) / f"example{i}"
                cpp.write_text(program(block, prefix, names))
                cmd = [cxx, "-std=c++17", "-Wall", "-Wextra", "-Werror", "-o", str(exe), str(cpp)]
                cmd += [f"-I{d}" for d in incs] + libs
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
                if p.returncode != 0:
                    print(f"FAIL: example {i} does not compile cleanly:\n{p.stderr[-3000:]}")
                    fails += 1
                    continue
                for run in (1, 2):
                    p = subprocess.run([str(exe)], capture_output=True, text=True, timeout=120)
                    if p.returncode != 0 or p.stderr:
                        print(f"FAIL: example {i}, run {run}: exit {p.returncode}: {p.stderr}")
                        fails += 1
                print(f"example {i}: built, ran twice")
    finally:
        for n in names:
            for f in (f"/dev/shm/nerve.{n}", f"/dev/shm/nerve-bell.{n}"):
                if os.path.exists(f):
                    os.unlink(f)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())

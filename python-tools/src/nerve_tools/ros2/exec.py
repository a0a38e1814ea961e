"""nerve ros2 exec: run a ROS 2 program on rmw_nerve_cpp.

    nerve-ros2-exec [--lib PATH] [--rcl PATH] [--print] -- CMD [ARGS...]

Sets RMW_IMPLEMENTATION=rmw_nerve_cpp and runs CMD. Where the rcl that CMD
will load was built without runtime RMW selection (its ELF NEEDED entries
name an RMW library such as librmw_fastrtps_cpp.so instead of
librmw_implementation.so, as in the ROS 2 wheels on PyPI), rmw_nerve_cpp is
also put in LD_PRELOAD, so that its rmw_* functions are the ones rcl calls.
With runtime selection (ROS 2's Debian packages), the library's directory is
added to LD_LIBRARY_PATH, where rmw_implementation finds it.

Which rcl: --rcl PATH; else, when CMD is a Python interpreter of a virtual
environment (or a script whose #! line names one), that environment's
lib/librcl.so; else lib/librcl.so under AMENT_PREFIX_PATH, then
LD_LIBRARY_PATH. Which rmw_nerve_cpp: --lib PATH, $NERVE_RMW_LIB, then the
lib/ of CMD's virtual environment (where the ros-jazzy-rmw-nerve-cpp wheel
puts it, beside the ROS 2 wheels it was built for), then
librmw_nerve_cpp.so beside the nerve command (build tree: build/rmw_nerve/;
installed: PREFIX/lib), then LD_LIBRARY_PATH and AMENT_PREFIX_PATH/lib
(a `cmake --install` into /opt/ros/<distro>).
"""

from __future__ import annotations

import argparse
import os
import shutil
import struct
import sys
from pathlib import Path

LIB = "librmw_nerve_cpp.so"


def elf_needed(path: Path) -> list[str]:
    """The DT_NEEDED entries of an ELF64 little-endian shared object."""
    data = path.read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError(f"{path}: not a 64-bit little-endian ELF file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = []
    for i in range(shnum):
        off = shoff + i * shentsize
        sh_type, = struct.unpack_from("<I", data, off + 4)
        sh_offset, sh_size = struct.unpack_from("<QQ", data, off + 0x18)
        sh_link, = struct.unpack_from("<I", data, off + 0x28)
        sections.append((sh_type, sh_offset, sh_size, sh_link))
    needed = []
    for sh_type, off, size, link in sections:
        if sh_type != 6:  # SHT_DYNAMIC
            continue
        str_off = sections[link][1]
        for pos in range(off, off + size, 16):
            tag, val = struct.unpack_from("<qQ", data, pos)
            if tag == 0:
                break
            if tag == 1:  # DT_NEEDED
                end = data.index(b"\0", str_off + val)
                needed.append(data[str_off + val:end].decode())
    return needed


def _env_dirs(var: str, sub: str = "") -> list[Path]:
    return [Path(d) / sub for d in os.environ.get(var, "").split(":") if d]


def _venv_of(cmd: str) -> Path | None:
    exe = shutil.which(cmd)
    if not exe:
        return None
    p = Path(exe)
    try:
        with open(p, "rb") as f:
            head = f.readline(200)
        if head.startswith(b"#!"):
            p = Path(head[2:].split()[0].decode())
    except OSError:
        return None
    venv = p.parent.parent
    return venv if (venv / "pyvenv.cfg").exists() else None


def find_rcl(cmd: str) -> Path | None:
    venv = _venv_of(cmd)
    dirs = ([venv / "lib"] if venv else []) + _env_dirs("AMENT_PREFIX_PATH", "lib") \
        + _env_dirs("LD_LIBRARY_PATH")
    for d in dirs:
        if (d / "librcl.so").exists():
            return d / "librcl.so"
    return None


def find_lib(cmd: str | None = None) -> Path | None:
    if os.environ.get("NERVE_RMW_LIB"):
        return Path(os.environ["NERVE_RMW_LIB"])
    venv = _venv_of(cmd) if cmd else None
    dirs = [venv / "lib"] if venv else []
    nerve = os.environ.get("NERVE_CLI") or shutil.which("nerve")
    if nerve:
        bindir = Path(nerve).resolve().parent
        dirs += [bindir.parent / "rmw_nerve", bindir.parent / "lib"]
    dirs += _env_dirs("LD_LIBRARY_PATH") + _env_dirs("AMENT_PREFIX_PATH", "lib")
    for d in dirs:
        if (d / LIB).exists():
            return d / LIB
    return None


def plan(cmd: str, lib: Path, rcl: Path | None) -> tuple[dict[str, str], str]:
    """The environment for CMD and one line saying why."""
    env = dict(os.environ)
    env["RMW_IMPLEMENTATION"] = "rmw_nerve_cpp"
    needed = elf_needed(rcl) if rcl else []
    if "librmw_implementation.so" in needed:
        env["LD_LIBRARY_PATH"] = ":".join(
            [str(lib.parent)] + [d for d in env.get("LD_LIBRARY_PATH", "").split(":") if d])
        why = f"{rcl} selects its RMW at run time (NEEDED librmw_implementation.so)"
    else:
        env["LD_PRELOAD"] = " ".join([str(lib)] + env.get("LD_PRELOAD", "").split())
        linked = [n for n in needed if n.startswith("librmw_") and "__" not in n
                  and n not in ("librmw_dds_common.so", "librmw_fastrtps_shared_cpp.so",
                                "librmw_security_common.so")]
        if rcl:
            why = f"{rcl} is linked to {', '.join(linked) or 'no RMW'} (NEEDED): preloading"
        else:
            why = "no librcl.so found for the command: preloading"
    return env, why


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="nerve ros2 exec",
        description="Run a ROS 2 program with rmw_nerve_cpp as its RMW.")
    ap.add_argument("--lib", type=Path, help="librmw_nerve_cpp.so to use")
    ap.add_argument("--rcl", type=Path, help="the librcl.so the command loads")
    ap.add_argument("--print", action="store_true",
                    help="print the decision and the variables set, do not run")
    ap.add_argument("cmd", nargs=argparse.REMAINDER, help="-- CMD [ARGS...]")
    a = ap.parse_args(argv)
    cmd = a.cmd[1:] if a.cmd[:1] == ["--"] else a.cmd
    if not cmd:
        ap.print_usage(sys.stderr)
        print("nerve ros2 exec: error: no command", file=sys.stderr)
        return 2
    lib = a.lib or find_lib(cmd[0])
    if not lib or not lib.exists():
        print(f"nerve ros2 exec: error: {LIB} not found (install the ros-jazzy-rmw-nerve-cpp "
              "wheel into the command's venv, or build it: make ros2-venvs build; "
              "or give --lib or NERVE_RMW_LIB)", file=sys.stderr)
        return 1
    rcl = a.rcl or find_rcl(cmd[0])
    try:
        env, why = plan(cmd[0], lib.resolve(), rcl)
    except (OSError, ValueError) as e:
        print(f"nerve ros2 exec: error: {e}", file=sys.stderr)
        return 1
    if a.print:
        print(why)
        for k in ("RMW_IMPLEMENTATION", "LD_PRELOAD", "LD_LIBRARY_PATH"):
            if k in env and env.get(k) != os.environ.get(k):
                print(f"{k}={env[k]}")
        return 0
    try:
        os.execvpe(cmd[0], cmd, env)
    except OSError as e:
        print(f"nerve ros2 exec: error: {cmd[0]}: {e.strerror}", file=sys.stderr)
        return 127
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())

"""Generate C/C++ code for a ROS 2 interface package with the Jazzy wheels' rosidl.

The wheels carry each rosidl generator twice (a wheel's dist-info and the
package's egg-info), so `rosidl generate` stops on "Found duplicate entry
point". This calls the same generator extensions directly, one output
folder per generator, as rosidl_generate_interfaces() lays them out.

usage: python rosidl_gen.py PACKAGE PACKAGE_SRC_DIR OUT_DIR INCLUDE_DIR FILE...
"""

import inspect
import pathlib
import sys

from rosidl_adapter.msg import convert_msg_to_idl
from rosidl_adapter.srv import convert_srv_to_idl
from rosidl_generator_c.cli import GenerateC
from rosidl_generator_cpp.cli import GenerateCpp
from rosidl_generator_type_description.cli import HashTypeDescription
from rosidl_typesupport_c.cli import GenerateCTypesupport
from rosidl_typesupport_cpp.cli import GenerateCppTypesupport
from rosidl_typesupport_fastrtps_c.cli import GenerateFastRTPSCTypesupport
from rosidl_typesupport_fastrtps_cpp.cli import GenerateFastRTPSCppTypesupport

# rmw_nerve reads the fastrtps type supports (rmw_nerve/CMakeLists.txt writes
# them to its rmw_typesupport resource), so those are the ones generated.
EXTENSIONS = {
    "rosidl_generator_c": GenerateC,
    "rosidl_generator_cpp": GenerateCpp,
    "rosidl_typesupport_c": GenerateCTypesupport,
    "rosidl_typesupport_cpp": GenerateCppTypesupport,
    "rosidl_typesupport_fastrtps_c": GenerateFastRTPSCTypesupport,
    "rosidl_typesupport_fastrtps_cpp": GenerateFastRTPSCppTypesupport,
}


def main(argv: list[str]) -> int:
    if len(argv) < 5:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    package, src, out, include = argv[0], argv[1], pathlib.Path(argv[2]), argv[3]
    idl_dir = out / "idl"
    idl = []
    for f in map(pathlib.Path, argv[4:]):
        # rosidl_adapter.cli would need catkin_pkg, which the wheels lack.
        convert = convert_msg_to_idl if f.suffix == ".msg" else convert_srv_to_idl
        out_file = convert(pathlib.Path(src), package, f, idl_dir / f.parent)
        idl.append(f"{idl_dir}:{out_file.relative_to(idl_dir).as_posix()}")
    hashes = HashTypeDescription("type_description").generate_type_hashes(
        package, idl, [include], out / "rosidl_generator_type_description"
    )
    for name, cls in EXTENSIONS.items():
        generate = cls(name).generate
        extra = {}
        if "type_description_files" in inspect.signature(generate).parameters:
            extra["type_description_files"] = hashes
        # <out>/<generator>/<package>/msg/...: includes say <package>/msg/...
        generate(package, idl, [include], output_path=out / name / package, **extra)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

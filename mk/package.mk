# Packages as robot builders install them (issue 31 §8-9; docs/packaging.md):
#   make package   the Debian packages (.deb), by CPack, in build-package/packages
#   make wheels    the Python wheels of python/ and python-tools/, in dist/
# test-package installs the .debs into a fresh root and builds and runs C,
# C++ and Ach programs against them (scripts/test-package.sh); test-wheels
# installs the wheels into a fresh venv and runs Python tests from outside
# the source tree (scripts/test-wheels.sh).

PKG_BUILD ?= build-package
DIST ?= dist
# dpkg-shlibdeps (dpkg-dev) and file: CPack's dependency scan; lintian
# checks the packages. Installed by the package targets only, not by `deps`.
PACKAGE_PKGS := dpkg-dev file lintian

TEST_TARGETS += test-package test-wheels

.PHONY: package package-deps wheels test-package test-wheels

package-deps: deps
	@scripts/deps.sh $(PACKAGE_PKGS)

# nerve-bridge-rs, the data path of `nerve bridge`, for the Debian package
# nerve-bridge and the wheel nerve-bridge: the release build of mk/rust.mk
# (rust-bridge-build, which make test's test-bridge-prebuild has already
# made: the zenoh tree is never compiled twice), or none where no cargo is
# new enough (then neither is made, and the tests say so).
BRIDGE_RS_BIN = $(shell rust/cargo-ok.sh $(CARGO) rust/Cargo.toml >/dev/null && echo $(RUST_BRIDGE_BIN))

# Prefix /usr: Debian's multiarch LIBDIR (lib/x86_64-linux-gnu); no RUNPATH
# in the packaged programs; only what the packages hold is built.
PACKAGE_TREE = cmake -S . -B $(PKG_BUILD) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Release \
	    -DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_SKIP_INSTALL_RPATH=ON \
	    -DNERVE_BRIDGE_RS=$(BRIDGE_RS_BIN) \
	    -DNERVE_DEB_LAYOUT=ON -DNERVE_BUILD_TESTS=OFF \
	    -DNERVE_BUILD_BENCH=OFF -DNERVE_BUILD_EXAMPLES=OFF -DNERVE_BUILD_RMW=OFF && \
	    cmake --build $(PKG_BUILD) -j$(JOBS)
# The tree alone (no packages, no Debian packages installed): make test
# builds it beside the first test targets (test-trees-background).
.PHONY: package-tree
package-tree:
	$(call locked,package,$(PACKAGE_TREE))

package: package-deps rust-bridge-build
	$(call locked,package,$(PACKAGE_TREE))
	rm -rf $(PKG_BUILD)/packages
	cd $(PKG_BUILD) && cpack -G DEB
	@ls -1 $(PKG_BUILD)/packages/*.deb

# The wheels: `nerve ros2` (nerve-tools) run on the packaged nerve-ros2-dds.
# One fresh venv with both wheels serves test-package and test-wheels
# (scripts/wheels-venv.sh; made again at every run).
WHEELS_VENV ?= $(DIST)/venv-fresh
.PHONY: wheels-venv
wheels-venv: wheels
	scripts/wheels-venv.sh $(DIST) $(WHEELS_VENV)

test-package: package wheels-venv
	NERVE_WHEELS_DIR=$(abspath $(DIST)) NERVE_WHEELS_VENV=$(abspath $(WHEELS_VENV)) \
	    scripts/test-package.sh $(PKG_BUILD)/packages

# The wheels are built with the pinned backends of each pyproject.toml in
# $(DIST)/.venv-build (scripts/build-wheels.sh); the test installs them into
# a fresh venv and runs the tests there, with the `nerve` command of the
# regular build for the interop tests and the external verbs.
# The rmw_nerve_cpp wheel (ros-jazzy-rmw-nerve-cpp) is built against the
# Jazzy wheels' venv, and tested in a fresh venv with the same pins.
ROS2_JAZZY_VENV ?= .venv-jazzy
wheels: deps $(ROS2_JAZZY_VENV)/.nerve-ros2 rust-bridge-build
	NERVE_BRIDGE_RS_BIN=$(BRIDGE_RS_BIN) scripts/build-wheels.sh $(DIST) $(ROS2_JAZZY_VENV)

test-wheels: wheels-venv build
	NERVE_ROS2_JAZZY_PKGS="$(ROS2_JAZZY_PKGS)" NERVE_WHEELS_VENV=$(abspath $(WHEELS_VENV)) \
	    scripts/test-wheels.sh $(DIST) $(abspath $(BUILD))/tools/nerve

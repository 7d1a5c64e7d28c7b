# Sourced by tests/gpu/run.sh on a machine without this project's Debian libraries: unpacks the
# packages tests/gpu/fetch_debs.sh saved in .gpu-debs/ under a private prefix (never over /) and
# points pkg-config, CMake, the loader and UCX at them, and at nothing else, so the build uses
# what was brought even where the machine has other copies.
DEBS_PREFIX="${DEBS_PREFIX:-/tmp/domino-debs}"
mkdir -p "$DEBS_PREFIX"
for deb in "$ROOT"/.gpu-debs/*.deb; do dpkg-deb -x "$deb" "$DEBS_PREFIX"; done
multiarch="$DEBS_PREFIX/usr/lib/x86_64-linux-gnu"
export PATH="$DEBS_PREFIX/usr/bin:$PATH"
export LD_LIBRARY_PATH="$multiarch${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
# The .pc files say prefix=/usr: the sysroot puts the unpacked tree in front of every path.
export PKG_CONFIG_LIBDIR="$multiarch/pkgconfig:$DEBS_PREFIX/usr/share/pkgconfig"
export PKG_CONFIG_PATH="$PKG_CONFIG_LIBDIR"
export PKG_CONFIG_SYSROOT_DIR="$DEBS_PREFIX"
export CMAKE_PREFIX_PATH="$DEBS_PREFIX/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
export UCX_MODULE_DIR="$multiarch/ucx"

#!/usr/bin/env bash
# Builds the schedule library alone (-DVP_RUNTIME=OFF -DVP_TESTS=OFF) in a clean folder with
# only jansson visible: pkg-config sees nothing but jansson.pc (no cmocka, OpenBLAS or MPI)
# and CMake may not look for MPI. Then checks that the library needs only libc, libm and
# libjansson (readelf -d), that nothing of the runtime was built, and that the installed
# library serves a program built with pkg-config, which finds it by itself (the run path
# in vpipe.pc). Run by .ci/run (a whole build: not a ctest). Usage: tests/library_only.sh
# BUILD_DIR
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$1
rm -rf "$build"
mkdir -p "$build/pkgconfig"
cp "$(pkg-config --variable=pcfiledir jansson)/jansson.pc" "$build/pkgconfig/"
export PKG_CONFIG_LIBDIR=$build/pkgconfig PKG_CONFIG_PATH=
cmake -S "$src" -B "$build" -DVP_RUNTIME=OFF -DVP_TESTS=OFF -DVP_WERROR=ON \
    -DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON --no-warn-unused-cli >"$build/configure.log"
cmake --build "$build" -j2 >"$build/build.log"

needed=$(readelf -d "$build/libvpipe.so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | tr '\n' ' ')
echo "libvpipe.so needs: $needed"
for lib in $needed; do
    case $lib in
    libc.so.* | libm.so.* | libjansson.so.*) ;;
    *) echo "library_only: libvpipe.so needs $lib" >&2; exit 1 ;;
    esac
done
for part in libvpipe-runtime.so vpipe; do
    if [ -e "$build/$part" ]; then echo "library_only: $part was built" >&2; exit 1; fi
done

cmake --install "$build" --prefix "$build/prefix" >/dev/null
export PKG_CONFIG_LIBDIR=$build/prefix/lib/pkgconfig:$build/pkgconfig
if pkg-config --exists vpipe-runtime; then echo "library_only: vpipe-runtime.pc installed" >&2; exit 1; fi
cc -std=c11 -Wall -Werror -o "$build/consumer" "$src/tests/install/consumer/consumer.c" \
    $(pkg-config --cflags --libs vpipe)
env -u LD_LIBRARY_PATH "$build/consumer" | grep -q '"family": "v-half"'
echo "library_only: the schedule library builds, installs and runs with only jansson"

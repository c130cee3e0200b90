#!/usr/bin/env bash
# Installs the build into a scratch prefix and uses it as a program would: the installed
# vpipe runs; a C program builds against the installed libraries with
# `pkg-config --cflags --libs vpipe` (and vpipe-runtime), and with a CMake project using
# find_package(vpipe), and prints what the installed vpipe prints, finding the installed
# libraries by itself (no LD_LIBRARY_PATH: the run path pkg-config or CMake gave it); a C++
# program calls the library (the extern "C" guards). The shared libraries export exactly the functions the
# headers mark VP_API, no internal vp__ symbol, and every public function is marked.
# Usage: consumers.sh BUILD_DIR SOURCE_DIR
build=$1
src=$2
. "$src/tests/cli/expect.bash"
prefix=$tmp/prefix
expect 0 "" -- cmake --install "$build" --prefix "$prefix"
lib=$prefix/lib
vp=$prefix/bin/vpipe
want=$("$vp" simulate v-half -p 4 -m 8 --json) || bad "the installed vpipe does not run"

# pkg-config
export PKG_CONFIG_PATH=$prefix/lib/pkgconfig
expect 0 "" -- test "vpipe $(pkg-config --modversion vpipe)" = "$("$vp" --version)"
expect 0 "" -- test "$(pkg-config --modversion vpipe-runtime)" = "$(pkg-config --modversion vpipe)"
cc=${CC:-cc}
expect 0 "" -- $cc -std=c11 -Wall -Werror -o "$tmp/pc" "$src/tests/install/consumer/consumer.c" $(pkg-config --cflags --libs vpipe)
expect 0 "" -- $cc -std=c11 -Wall -Werror -DWITH_RUNTIME -o "$tmp/pc_rt" "$src/tests/install/consumer/consumer.c" $(pkg-config --cflags --libs vpipe-runtime)
unset LD_LIBRARY_PATH
loaded() { # the file the loader gives a program for a library's soname
    realpath "$(ldd "$1" | awk -v so="$2" '$1 == so {print $3}')"
}
for exe in pc pc_rt; do
    got=$("$tmp/$exe") || bad "$exe failed"
    [ "$got" = "$want" ] || bad "$exe printed something else than vpipe simulate: $got"
    [ "$(loaded "$tmp/$exe" libvpipe.so.0)" = "$(realpath "$lib/libvpipe.so.0")" ] ||
        bad "$exe loads $(loaded "$tmp/$exe" libvpipe.so.0), not the installed library"
done
[ "$(loaded "$tmp/pc_rt" libvpipe-runtime.so.0)" = "$(realpath "$lib/libvpipe-runtime.so.0")" ] ||
    bad "pc_rt loads $(loaded "$tmp/pc_rt" libvpipe-runtime.so.0), not the installed runtime"

# CMake
expect 0 "" -- cmake -S "$src/tests/install/consumer" -B "$tmp/cm" -DCMAKE_PREFIX_PATH="$prefix"
expect 0 "" -- cmake --build "$tmp/cm"
for exe in consumer consumer_runtime; do
    got=$("$tmp/cm/$exe") || bad "$exe (CMake) failed"
    [ "$got" = "$want" ] || bad "$exe (CMake) printed something else than vpipe simulate: $got"
done

# C++: the headers compile as C++ and declare the functions with C linkage.
if command -v c++ >/dev/null; then
    printf '#include <vpipe/vpipe.h>\n#include <cstdio>\nint main() { std::puts(vp_version()); }\n' >"$tmp/cxx.cpp"
    expect 0 "" -- c++ -Wall -Werror -o "$tmp/cxx" "$tmp/cxx.cpp" $(pkg-config --cflags --libs vpipe-runtime)
    expect 0 "$(pkg-config --modversion vpipe)" -- "$tmp/cxx"
fi

# Exported symbols: exactly the functions marked VP_API, nothing internal.
exported=$(nm -D --defined-only "$lib/libvpipe.so" "$lib/libvpipe-runtime.so" | awk 'NF == 3 {print $3}' | sort)
declared=$(cat "$prefix"/include/vpipe/*.h | grep -oE '^VP_API [^(]*\bvp_[a-z0-9_]+\(' | grep -oE 'vp_[a-z0-9_]+\($' | tr -d '(' | sort)
unmarked=$(cat "$prefix"/include/vpipe/*.h | grep -E '^[a-z][^(#;{}=]*\bvp_[a-z0-9_]+\(' | grep -vE '^(typedef|static|return) ')
[ -z "$unmarked" ] || bad "public functions without VP_API: $unmarked"
internal=$(grep '^vp__' <<<"$exported")
[ -z "$internal" ] || bad "internal symbols exported: $internal"
[ "$(grep '^vp_' <<<"$exported")" = "$declared" ] ||
    bad "exported and declared functions differ: $(diff <(grep '^vp_' <<<"$exported") <(echo "$declared"))"
[ "$(grep -vc '^vp_' <<<"$exported")" = 0 ] || bad "exported non-vpipe symbols: $(grep -v '^vp_' <<<"$exported")"
expect 0 "" -- test "$(wc -l <<<"$declared")" -gt 100
finish

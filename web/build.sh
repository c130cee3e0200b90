#!/usr/bin/env bash
# Builds the browser playground into OUT with Debian's emscripten:
#   OUT/site/                  the served page (index.html, style.css, draw.js, app.js, worker.js,
#                              vpipe.js, vpipe.wasm): copy it to any static host
#   OUT/vpipe-playground.html  the same page as one file, the WebAssembly embedded: opens
#                              from disk with no server
# The module is the schedule library (libvpipe, -DVP_RUNTIME=OFF, without pthreads: the
# planner searches in the calling thread, and the page runs it in a Web Worker) and
# jansson, compiled from Debian's source package of the jansson the native build uses
# (`apt-get source`, which checks it against the archive's signed index; it needs a
# deb-src entry, which scripts/install-deps adds). The page calls the public string API
# (vpipe/request.h, vpipe/io.h) directly: there is no C glue. jansson and the library are
# rebuilt only when missing; the page's files are always reassembled.
# Usage: web/build.sh OUT
set -euo pipefail
[ $# = 1 ] || { echo "usage: web/build.sh OUT" >&2; exit 2; }
src=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)
# Debian's emcc finds its JavaScript dependencies (acorn, ...) only through NODE_PATH.
export NODE_PATH=/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}

quiet() { # quiet LOG COMMAND...: runs COMMAND into LOG; on failure shows LOG's end and stops
    local log=$1
    shift
    "$@" >"$log" 2>&1 || { tail -40 "$log" >&2; echo "web: failed: $* (log: $log)" >&2; exit 1; }
}

# jansson for WebAssembly, version for version the native one.
jansson=$out/jansson
version=$(dpkg-query -W -f '${source:Version}' libjansson-dev)
if [ ! -e "$jansson/prefix/lib/libjansson.a" ] || [ "$(cat "$jansson/version" 2>/dev/null)" != "$version" ]; then
    echo "web: jansson $version from Debian's source package"
    rm -rf "$jansson"
    mkdir -p "$jansson"
    (cd "$jansson" && apt-get source -qq "jansson=$version" >source.log 2>&1) ||
        { cat "$jansson/source.log" >&2; echo "web: apt-get source failed: run scripts/install-deps (deb-src entry)" >&2; exit 1; }
    tree=$(find "$jansson" -mindepth 1 -maxdepth 1 -type d -name 'jansson-*')
    quiet "$jansson/configure.log" emcmake cmake -S "$tree" -B "$jansson/build" \
        -DCMAKE_BUILD_TYPE=Release -DJANSSON_BUILD_DOCS=OFF -DJANSSON_WITHOUT_TESTS=ON \
        -DJANSSON_EXAMPLES=OFF -DJANSSON_BUILD_SHARED_LIBS=OFF -DCMAKE_INSTALL_PREFIX="$jansson/prefix"
    quiet "$jansson/build.log" cmake --build "$jansson/build" -j2
    quiet "$jansson/install.log" cmake --install "$jansson/build"
    echo "$version" >"$jansson/version"
fi

# The schedule library as a static WebAssembly archive. pkg-config sees only the
# WebAssembly jansson; its library lies outside emscripten's sysroot, hence BOTH.
echo "web: the schedule library"
PKG_CONFIG_LIBDIR=$jansson/prefix/lib/pkgconfig PKG_CONFIG_PATH='' \
    quiet "$out/lib-configure.log" emcmake cmake -S "$src" -B "$out/lib" \
    -DCMAKE_BUILD_TYPE=Release -DVP_RUNTIME=OFF -DVP_TESTS=OFF -DBUILD_SHARED_LIBS=OFF \
    -DVP_WERROR=ON -DCMAKE_FIND_ROOT_PATH_MODE_LIBRARY=BOTH
quiet "$out/lib-build.log" cmake --build "$out/lib" -j2

# The module: the functions web/worker.js calls, and the runtime helpers it uses.
exports=_malloc,_free,_vp_version,_vp_status_name,_vp_family_count,_vp_family_at
exports+=,_vp_arch_preset_count,_vp_arch_preset_name,_vp_gpu_preset_count,_vp_gpu_preset_name
exports+=,_vp_request_schedule,_vp_request_simulate,_vp_request_render,_vp_request_plan
exports+=,_vp_schedule_parse,_vp_schedule_free,_vp_json_write
exports+=,_vp_torch_csv_write,_vp_torch_csv_notes,_vp_request_call,_vp_free
link() { # link OUTPUT EXTRA_FLAGS...
    local output=$1
    shift
    emcc -O3 "$out/lib/libvpipe.a" "$jansson/prefix/lib/libjansson.a" -o "$output" \
        -sMODULARIZE=1 -sEXPORT_NAME=createVpipe -sENVIRONMENT=worker \
        -sALLOW_MEMORY_GROWTH=1 -sEXPORTED_FUNCTIONS="$exports" \
        -sEXPORTED_RUNTIME_METHODS=UTF8ToString,stringToUTF8,lengthBytesUTF8,FS "$@"
}
echo "web: the page"
rm -rf "$out/site" "$out/single"
mkdir -p "$out/site" "$out/single"
link "$out/site/vpipe.js"
link "$out/single/vpipe.js" -sSINGLE_FILE=1
cp "$src"/web/{index.html,style.css,draw.js,app.js,worker.js} "$out/site/"
node "$src/web/single.mjs" "$out/site" "$out/single/vpipe.js" "$out/vpipe-playground.html"
echo "web: built $out/site/ and $out/vpipe-playground.html"

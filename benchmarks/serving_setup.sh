#!/bin/sh
# Installs what benchmarks/serving.py needs besides onnxc, outside the system python:
#  1. the Triton peer's venv: nvidia-pytriton 0.7.0 (bundles tritonserver 2.51.0), onnxruntime
#     1.32, numpy. A venv of its own: pytriton's dependencies must not move the system
#     python's pins (protobuf < 7 for tritonclient 2.73).
#  2. perf_analyzer 2.60: the binary inside the tritonclient 2.60.0 wheel (PyPI's
#     `perf-analyzer` is a placeholder). It needs glibc 2.38 and GLIBCXX_3.4.32; where the
#     system has less (Debian 12: 2.36), Debian 13's libc6, libstdc++6 and libgcc-s1 are
#     downloaded with apt (private lists, nothing installed) and unpacked beside it, and
#     run.sh starts it through that loader.
# Usage: sh benchmarks/serving_setup.sh [VENV_DIR] [PERF_ANALYZER_DIR]
#        (defaults: /work/venvs/triton, /work/tools/perf_analyzer)
set -eu
venv=${1:-/work/venvs/triton}
tools=${2:-/work/tools/perf_analyzer}

if [ ! -x "$venv/bin/python" ]; then
    python -m venv "$venv"
fi
"$venv/bin/pip" install -q nvidia-pytriton==0.7.0 'onnxruntime==1.32.*' numpy

mkdir -p "$tools"
if [ ! -x "$tools/perf_analyzer" ]; then
    wheels=$(mktemp -d)
    python -m pip download -q --no-deps --only-binary=:all: tritonclient==2.60.0 -d "$wheels"
    python -m zipfile -e "$wheels"/tritonclient-2.60.0-*.whl "$wheels/x"
    cp "$wheels/x/tritonclient-2.60.0.data/data/bin/perf_analyzer" "$tools/perf_analyzer"
    chmod +x "$tools/perf_analyzer"
    rm -rf "$wheels"
fi

glibc=$(getconf GNU_LIBC_VERSION | cut -d' ' -f2)
if [ "$(printf '%s\n2.38\n' "$glibc" | sort -V | head -1)" = "2.38" ]; then
    printf '#!/bin/sh\nexec "$(dirname "$(readlink -f "$0")")/perf_analyzer" "$@"\n' > "$tools/run.sh"
else
    apt="$tools/apt"
    mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$tools/debs" "$tools/root"
    cat > "$apt/trixie.sources" <<'EOF'
Types: deb
URIs: http://deb.debian.org/debian
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
    opts="-o Dir::Etc::sourcelist=/dev/null -o Dir::Etc::sourceparts=$apt
          -o Dir::State::Lists=$apt/lists -o Dir::Cache=$apt/cache -o Debug::NoLocking=1"
    # shellcheck disable=SC2086
    apt-get $opts update -qq
    # shellcheck disable=SC2086
    (cd "$tools/debs" && apt-get $opts download -qq libc6 libstdc++6 libgcc-s1)
    for deb in "$tools"/debs/*.deb; do dpkg-deb -x "$deb" "$tools/root"; done
    cat > "$tools/run.sh" <<'EOF'
#!/bin/sh
# perf_analyzer 2.60 needs glibc 2.38 / GLIBCXX_3.4.32: run it through Debian 13's loader,
# libc and libstdc++ unpacked under root/ (the system's libssl and libz are used as they are).
here=$(dirname "$(readlink -f "$0")")
lib=$here/root/usr/lib/x86_64-linux-gnu
exec "$lib/ld-linux-x86-64.so.2" --library-path "$lib:/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu" "$here/perf_analyzer" "$@"
EOF
fi
chmod +x "$tools/run.sh"
"$tools/run.sh" --version

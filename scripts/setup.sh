#!/usr/bin/env bash
# Installs what Loom builds with, from Debian's packages, only where something is missing.
# Safe to run again and again: it does nothing once everything is there.
set -euo pipefail

packages=(
    cmake            # build system
    make
    g++              # C++20 compiler
    clang-format     # formatting check in the test suite
    libgtest-dev     # unit tests (GoogleTest)
    libbenchmark-dev # micro-benchmarks (Google Benchmark)
    libfmt-dev       # message formatting (g++ 12 has no <format>)
    libcli11-dev     # the loom command's subcommands and options
    nlohmann-json3-dev  # JSON (loom gguf dump --json)
    pkg-config       # finds PCRE2
    libpcre2-dev     # Unicode-aware regexes for the BPE pre-tokenizers
    python3          # JSON checks in the command-line tools' tests
    python3-jinja2   # reference renderer for the Jinja probes' expected outputs (tests/engine/jinja)
    python3-venv python3-pip python3-pytest  # the Python module's install and tests (python/)
    libcpp-httplib-dev  # HTTP for loom serve; its header also wants:
    libssl-dev zlib1g-dev libbrotli-dev
    curl             # loom serve's test talks to the server
    # The JSON Schema references: the specification's test suite (schemas with documents marked
    # valid or not) for the converter's tests, and python3-jsonschema (which it brings) to
    # validate what `loom run --json-schema` writes.
    json-schema-test-suite python3-jsonschema
    # loom serve's chat page is tested in a headless browser: Debian's Chromium, driven by the
    # puppeteer-core npm package (which downloads no browser of its own).
    chromium
)
# loom serve's test drives the server with the official openai npm client: Node and npm from
# Debian where the machine has no Node of its own.
command -v npm >/dev/null 2>&1 || packages+=(nodejs npm)
# `setup.sh fuzz`: what `make fuzz` adds (libFuzzer comes with clang's runtime).
if [ "${1:-}" = "fuzz" ]; then
    packages+=(clang libclang-rt-14-dev)
fi

missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
    echo "setup: installing ${missing[*]}"
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq "${missing[@]}"
fi

# The openai client and puppeteer-core, installed next to the tests that use them (tests/serve/node_modules, ignored
# by git), once.
serve_tests="$(dirname "$0")/../tests/serve"
if [ ! -d "$serve_tests/node_modules/openai" ] || [ ! -d "$serve_tests/node_modules/puppeteer-core" ]; then
    echo "setup: installing the openai and puppeteer-core npm packages into tests/serve"
    npm install --prefix "$serve_tests" --no-audit --no-fund --silent
fi

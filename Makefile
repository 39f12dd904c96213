# locus — thin driver over CMake + Ninja. `make demo` and `make test` are the two
# commands the README promises; everything else here is a convenience.

BUILD      ?= build
RELEASE    := $(BUILD)/release
TSAN       := $(BUILD)/tsan
ASAN       := $(BUILD)/asan
CMAKE_GEN  := -G Ninja
BENCH      := $(RELEASE)/bench/locus-bench
KV         := $(RELEASE)/src/kv/locus-kv
KV_ASAN    := $(ASAN)/src/kv/locus-kv
KV_TSAN    := $(TSAN)/src/kv/locus-kv
VENV       ?= $(BUILD)/venv
PY         := $(VENV)/bin/python

.PHONY: all deps build release install tsan asan test test-release test-tsan test-asan test-python test-kv test-kv-asan test-kv-tsan test-kv-memcached test-fuzz bench-kv bench-kv-tls bench-kv-threads test-dsm dsm-suite python figures demo format clean help

all: build

help:
	@echo "make demo    install what is missing, build, compare every mechanism (3 interleaved runs each),"
	@echo "             draw two quick seed figures and a report into $(BUILD)/demo (tools/demo, about 2 minutes)"
	@echo "make test    install what is missing, build release + ThreadSanitizer + ASan/UBSan, run every test (C and Python)"
	@echo "make build   release build only ($(RELEASE))"
	@echo "make install PREFIX=/usr/local  install liblocus (shared, static), liblocus-dsm, liblocus-preload.so,"
	@echo "             locus-kv, locus-bench, the DSM apps, headers, man pages, locus.pc, locus-dsm.pc and"
	@echo "             the CMake package (find_package(locus CONFIG)) under PREFIX"
	@echo "make python  create the Python venv for tools/ and tests/python ($(VENV): matplotlib, pytest)"
	@echo "make test-python  the Python tests only (tests/python, against $(BENCH))"
	@echo "make test-kv      locus-kv's protocol tests (tests/kv) against the release server"
	@echo "                  (test-kv-asan: the ASan/UBSan server; test-kv-tsan: the ThreadSanitizer one)"
	@echo "make test-kv-memcached  the same tests against Debian's memcached (the reference they were written against)"
	@echo "make bench-kv     memcaslap against locus-kv and Debian's memcached at 10/20/25/30% sets (bench/kv-memcaslap)"
	@echo "make bench-kv-tls the same with TLS on both servers, locus-kv-load as the client (bench/kv_load.c)"
	@echo "make bench-kv-threads  seed 000 Figure 4.1: throughput vs threads, sync vs async item allocation (bench/kv-threads)"
	@echo "make test-dsm     locus-dsm's tests only (litmus, lock stress, threads, failure, every application on 1, 2, 4 nodes x 1, 2, 4 threads)"
	@echo "make dsm-suite    the DSM applications on 1, 2, 4 nodes at 0 and 1 ms delay: table and plots in $(BUILD)/dsm-suite"
	@echo "make test-fuzz    build the libFuzzer targets with clang and run each for $${LOCUS_FUZZ_SECONDS:-30}s (tests/fuzz/run)"
	@echo "make figures reproduce every seed figure on this machine into $(BUILD)/figures (about 22 minutes on 2 CPUs),"
	@echo "             then write docs/results/reproduction.md (tools/reproduce all; tools/reproduce report)"
	@echo "make format  reformat the C sources with clang-format"
	@echo "make clean   remove $(BUILD)/"

deps:
	@sh scripts/install-deps

$(RELEASE)/build.ninja:
	cmake -S . -B $(RELEASE) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=Release

$(TSAN)/build.ninja:
	cmake -S . -B $(TSAN) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLOCUS_SANITIZE=thread

$(ASAN)/build.ninja:
	cmake -S . -B $(ASAN) $(CMAKE_GEN) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLOCUS_SANITIZE=address

release: deps $(RELEASE)/build.ninja
	ninja -C $(RELEASE)

build: release

PREFIX ?= /usr/local
install: release
	cmake --install $(RELEASE) --prefix $(PREFIX)

tsan: deps $(TSAN)/build.ninja
	ninja -C $(TSAN)

asan: deps $(ASAN)/build.ninja
	ninja -C $(ASAN)

# The release tests include stm (GCC TM cannot be built with sanitizers); the
# sanitizer builds run every test that their build has. The venv is there first so
# that the install test can draw a figure with the installed locus-reproduce.
# Tests labelled dsm-full (the rest of the DSM applications' nodes x threads
# matrix) run in make test-dsm only.
test-release: release python
	ctest --test-dir $(RELEASE) -LE dsm-full --output-on-failure

test-tsan: tsan
	ctest --test-dir $(TSAN) -LE dsm-full --output-on-failure

test-asan: asan
	ctest --test-dir $(ASAN) -LE dsm-full --output-on-failure

python:
	@LOCUS_VENV=$(VENV) sh scripts/install-python

test-python: release python
	LOCUS_BENCH=$(BENCH) $(PY) -m pytest -q tests/python

# locus-kv as a black box: the release server, then the ASan/UBSan build (a leak or
# an error report makes the server exit nonzero at its SIGTERM, which fails the test).
test-kv: release python
	LOCUS_KV=$(KV) $(PY) -m pytest -q tests/kv

test-kv-asan: asan python
	LOCUS_KV=$(KV_ASAN) ASAN_OPTIONS=abort_on_error=1:detect_leaks=1 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 $(PY) -m pytest -q tests/kv

# ThreadSanitizer's server under the tests that drive it from many connections at once
# (test_memory is left out: shadow memory makes its resident-size bound meaningless).
test-kv-tsan: tsan python
	LOCUS_KV=$(KV_TSAN) TSAN_OPTIONS=halt_on_error=1 $(PY) -m pytest -q tests/kv/test_concurrency.py tests/kv/test_udp.py \
	tests/kv/test_slabs.py tests/kv/test_admin.py tests/kv/test_lru.py \
	tests/kv/test_bad_input.py tests/kv/test_commands.py tests/kv/test_meta.py tests/kv/test_pymemcache.py \
	tests/kv/test_tls.py tests/kv/test_auth.py tests/kv/test_restart.py tests/kv/test_hash.py \
	tests/kv/test_binary.py tests/kv/test_binary_input.py tests/kv/test_sasl.py tests/kv/test_chunked.py \
	tests/kv/test_load.py

test-kv-memcached: python
	LOCUS_KV=memcached $(PY) -m pytest -q tests/kv

test-dsm: release
	ctest --test-dir $(RELEASE) -L dsm --output-on-failure

dsm-suite: release python
	$(PY) tools/dsm-suite --build $(RELEASE) --out $(BUILD)/dsm-suite

bench-kv: release
	bench/kv-memcaslap --locus-kv $(KV)

# the same with TLS on both servers: locus-kv-load is the client (memcaslap has no TLS)
bench-kv-tls: release
	bench/kv-memcaslap --locus-kv $(KV) --client locus-kv-load --tls

# seed 000 Figure 4.1: throughput vs threads, alloc=mutex vs alloc=async, against memcached
bench-kv-threads: release python
	$(PY) bench/kv-threads --locus-kv $(KV) --out $(BUILD)/kv-threads

test: test-release test-tsan test-asan test-python test-kv test-kv-asan test-kv-tsan test-fuzz

test-fuzz: deps
	sh tests/fuzz/run

# The main job: every mechanism and peer, side by side, on this machine; then quick
# versions of two seed figures and their report in $(BUILD)/demo.
demo: release python
	$(PY) tools/demo --bench $(BENCH) --out $(BUILD)/demo

# Every seed figure, measured here; the report is written even if some points failed,
# and the exit status still says that they did.
figures: release python
	@status=0; $(PY) tools/reproduce all --bench $(BENCH) --out $(BUILD)/figures || status=$$?; \
	$(PY) tools/reproduce report --out $(BUILD)/figures --dest docs/results && exit $$status

format:
	clang-format -i include/locus/*.h src/*/*.[ch] src/kv/*/*.[ch] bench/*.[ch] tests/*.[ch] \
	tests/fuzz/*.c apps/*.[ch] tests/dsm/*.c

clean:
	rm -rf $(BUILD)

# locus — thin driver over CMake + Ninja. `make demo` and `make test` are the two
# commands the README promises; everything else here is a convenience.

BUILD      ?= build
RELEASE    := $(BUILD)/release
TSAN       := $(BUILD)/tsan
ASAN       := $(BUILD)/asan
CMAKE_GEN  := -G Ninja
BENCH      := $(RELEASE)/bench/locus-bench

.PHONY: all deps build release tsan asan test test-release test-tsan test-asan demo format clean help

all: build

help:
	@echo "make demo    install what is missing, build, run the fetch-and-add comparison"
	@echo "make test    install what is missing, build release + ThreadSanitizer + ASan/UBSan, run every test"
	@echo "make build   release build only ($(RELEASE))"
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

tsan: deps $(TSAN)/build.ninja
	ninja -C $(TSAN)

asan: deps $(ASAN)/build.ninja
	ninja -C $(ASAN)

# The release tests include stm (GCC TM cannot be built with sanitizers); the
# sanitizer builds run every test that their build has.
test-release: release
	ctest --test-dir $(RELEASE) --output-on-failure

test-tsan: tsan
	ctest --test-dir $(TSAN) --output-on-failure

test-asan: asan
	ctest --test-dir $(ASAN) --output-on-failure

test: test-release test-tsan test-asan

# The main job: every mechanism and peer, side by side, on this machine.
DEMO_ARGS ?= --threads 1,2,8 --vars 1,1024 --duration 0.5
demo: release
	@echo "locus demo: fetch-and-add, every mechanism and peer, on $$(nproc) CPUs"
	$(BENCH) fetchadd $(DEMO_ARGS)

format:
	clang-format -i include/locus/*.h src/*/*.[ch] bench/*.[ch] tests/*.[ch]

clean:
	rm -rf $(BUILD)

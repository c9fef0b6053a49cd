# Thin front door over CMake/CTest. Every target first makes sure the machine
# has what it needs (scripts/setup is idempotent and quick when nothing is missing).
JOBS ?= $(shell nproc)
FUZZ_SECONDS ?= 20

.PHONY: all build test asan fuzz bench bench-long setup clean

all: build

setup:
	@bash scripts/setup --quiet

build: setup
	@cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build build -j $(JOBS)

test: build
	@cd build && ctest --output-on-failure -j $(JOBS)

asan: setup
	@cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DHYLA_SANITIZE=ON >/dev/null
	@cmake --build build-asan -j $(JOBS)
	@cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j $(JOBS) -LE slow

fuzz: setup
	@CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DHYLA_FUZZ=ON >/dev/null
	@cmake --build build-fuzz -j $(JOBS)
	@bash scripts/run-fuzz build-fuzz $(FUZZ_SECONDS)

bench: build
	@bash scripts/run-bench build

# long-context targets: 32K prompt on the 0.8B shape, 262K prompt on the tiny shape
bench-long: build
	@bash scripts/run-bench --long build

clean:
	rm -rf build build-asan build-fuzz

# Thin front door over CMake/CTest. Every target first makes sure the machine
# has what it needs (scripts/setup is idempotent and quick when nothing is missing).
JOBS ?= $(shell nproc)
FUZZ_SECONDS ?= 20

.PHONY: all build test test-avx512emu test-amxemu asan fuzz bench bench-long bench-llamacpp setup clean

all: build

setup:
	@bash scripts/setup --quiet

build: setup
	@cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build build -j $(JOBS)

test: build
	@cd build && ctest --output-on-failure -j $(JOBS)

# The avx512 kernel tier's tests on a CPU without AVX-512: a separate build whose avx512 tier
# runs on AVX2 with the intrinsics emulated (src/kernels/cpu/avx512_emu.h), and is the default
# tier there. The tests that run every tier, and the batched forward pass; the model tests on
# that tier alone (HYLA_ISA: make test runs the others).
EMU_TESTS = test_avx512_emu test_matmul_simd test_gdn_simd test_attn_simd test_golden test_formats_tiers \
            test_forward_batch
empty :=
space := $(empty) $(empty)
test-avx512emu: setup
	@cmake -S . -B build-avx512emu -DCMAKE_BUILD_TYPE=Release -DHYLA_AVX512_EMU=ON >/dev/null
	@cmake --build build-avx512emu -j $(JOBS) --target $(EMU_TESTS)
	@cd build-avx512emu && HYLA_ISA=avx512 ctest --output-on-failure -j $(JOBS) -R '^($(subst $(space),|,$(strip $(EMU_TESTS))))$$'

# The AMX kernels' tests on an AVX-512 CPU without AMX: a separate build whose AMX tiles (and
# the bf16 conversion they use) are emulated (src/kernels/cpu/amx_tile_emu.h), so the AMX paths
# run there, slowly, against their oracles. Skipped where the CPU lacks AVX-512.
AMX_EMU_TESTS = test_matmul_simd test_attn_simd test_quant_quality test_forward_batch
test-amxemu: setup
	@if grep -q avx512bw /proc/cpuinfo && grep -q avx512vl /proc/cpuinfo && grep -q avx512dq /proc/cpuinfo; then \
	  cmake -S . -B build-amxemu -DCMAKE_BUILD_TYPE=Release -DHYLA_AMX_EMU=ON >/dev/null && \
	  cmake --build build-amxemu -j $(JOBS) --target $(AMX_EMU_TESTS) && \
	  cd build-amxemu && HYLA_AMX=1 ctest --output-on-failure -j $(JOBS) -R '^($(subst $(space),|,$(strip $(AMX_EMU_TESTS))))$$'; \
	else echo "test-amxemu: no AVX-512 here, skipped"; fi

asan: setup
	@cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DHYLA_SANITIZE=ON >/dev/null
	@cmake --build build-asan -j $(JOBS) --target hyla_tests
	@cd build-asan && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j $(JOBS) -LE slow

fuzz: setup
	@CC=clang cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=Debug -DHYLA_FUZZ=ON >/dev/null
	@cmake --build build-fuzz -j $(JOBS) --target hyla_fuzzers
	@bash scripts/run-fuzz build-fuzz $(FUZZ_SECONDS) $(JOBS)

bench: build
	@bash scripts/run-bench build

# long-context targets: 32K prompt on the 0.8B shape, 262K prompt on the tiny shape
bench-long: build
	@bash scripts/run-bench --long build

# hyla against llama.cpp (a pinned commit, built once under build/llamacpp/) on the same random
# models, engines alternated: needs network once (PyPI) and ~10 GB of disk (venv, GGUF files)
bench-llamacpp: build
	@bash scripts/bench-llamacpp build

clean:
	rm -rf build build-asan build-fuzz build-avx512emu build-amxemu

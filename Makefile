# The two commands a newcomer needs: `make run` and `make test`. Everything else is a helper.
JOBS ?= $(shell nproc)
BUILD_RELEASE := build/release
BUILD_ASAN := build/asan

.PHONY: run test bench test-asan setup configure-release format clean

setup:
	./scripts/setup.sh

configure-release: setup
	cmake --preset release >/dev/null

run: configure-release
	cmake --build $(BUILD_RELEASE) -j $(JOBS) --target loom
	./$(BUILD_RELEASE)/tools/loom/loom demo

test: configure-release
	cmake --build $(BUILD_RELEASE) -j $(JOBS)
	ctest --test-dir $(BUILD_RELEASE) --output-on-failure -j $(JOBS)

bench: configure-release
	cmake --build $(BUILD_RELEASE) -j $(JOBS) --target loom-bench-matmul loom-bench-alloc
	./$(BUILD_RELEASE)/bench/loom-bench-matmul --benchmark_counters_tabular=true
	./$(BUILD_RELEASE)/bench/loom-bench-alloc --benchmark_counters_tabular=true

test-asan: setup
	cmake --preset asan >/dev/null
	cmake --build $(BUILD_ASAN) -j $(JOBS)
	ctest --test-dir $(BUILD_ASAN) --output-on-failure -j $(JOBS)

format:
	git ls-files '*.cpp' '*.h' | xargs clang-format -i

clean:
	rm -rf build

# The two commands a newcomer needs: `make run` and `make test`. Everything else is a helper.
JOBS ?= $(shell nproc)
BUILD_RELEASE := build/release
BUILD_ASAN := build/asan
BUILD_FUZZ := build/fuzz
FUZZ_SECONDS ?= 60
FUZZ_MAX_LEN ?= 65536

.PHONY: run test install test-portable bench test-asan test-asan-ci fuzz fuzz-long fuzz-gguf loadtest chaos chaos-asan setup configure-release format clean

setup:
	./scripts/setup.sh

configure-release: setup
	cmake --preset release >/dev/null

# A story, greedy: `make run [MODEL=file.gguf] [PROMPT=text]` (model: scripts/fetch_model.sh).
run: configure-release
	cmake --build $(BUILD_RELEASE) -j $(JOBS) --target loom
	model=$$(./scripts/fetch_model.sh "$(MODEL)" ./$(BUILD_RELEASE)/tools/loom/loom) && \
		./$(BUILD_RELEASE)/tools/loom/loom run -m "$$model" -p "$(or $(PROMPT),Once upon a time)" -n 128 --temp 0

test: configure-release
	cmake --build $(BUILD_RELEASE) -j $(JOBS)
	ctest --test-dir $(BUILD_RELEASE) --output-on-failure -j $(JOBS)

# The command, libloom.so, loom/loom.h, loom/engine.h (and the headers behind it), loom.pc and
# loom-cpp.pc under PREFIX (README "As a library").
PREFIX ?= /usr/local
install: configure-release
	cmake --build $(BUILD_RELEASE) -j $(JOBS) --target loom loom-shared
	cmake --install $(BUILD_RELEASE) --prefix "$(PREFIX)"
	if [ "$$(id -u)" -eq 0 ] && command -v ldconfig >/dev/null; then ldconfig; fi

bench: configure-release
	cmake --build $(BUILD_RELEASE) -j $(JOBS) --target loom-bench-matmul loom-bench-alloc loom-bench-gguf loom-bench-e2e loom-bench-bound
	./$(BUILD_RELEASE)/bench/loom-bench-matmul --benchmark_counters_tabular=true
	./$(BUILD_RELEASE)/bench/loom-bench-alloc --benchmark_counters_tabular=true
	./$(BUILD_RELEASE)/bench/loom-bench-gguf --benchmark_counters_tabular=true
	./$(BUILD_RELEASE)/bench/loom-bench-e2e --benchmark_counters_tabular=true
	# generation against the read loop, token by token, on the models loom-bench-e2e wrote
	./$(BUILD_RELEASE)/bench/loom-bench-bound -n 64 build/bench-models/*.gguf

# The portable build (-DLOOM_NATIVE=OFF: baseline x86-64, the kernels once per instruction-set
# level, chosen at start; core/isa.h): no code outside a level may go beyond x86-64
# (tests/tools/check_portable.sh), and the engine's tests (llama.cpp parity, batch invariance)
# pass at every level this CPU runs, forced one after the other with LOOM_ISA. The baseline level
# (SSE2) sums in the generic order, not in the order of the AVX2 kernels llama.cpp's fixtures came
# from, so there the tests that hold Loom to those fixtures' roundings are left out. At every
# level, attention_order_tests.cpp is left out too: its models are written by the build's own
# `gguf synth`, whose random weights come out in other last bits from an x86-64 build than from
# the -march=native one that wrote the files its llama.cpp references came from.
BASELINE_SKIPS := Fixtures/Parity.*:Fixtures/ExactParity.*:Fixtures/SlidingWindow.SmallWindowCacheStillMatchesLlamaCpp/*
PORTABLE_SKIPS := Shapes/AttentionOrder.*
BUILD_PORTABLE := build/portable
PORTABLE_TESTS ?= loom-engine-tests loom-quant-tests
test-portable: setup
	cmake --preset portable >/dev/null
	cmake --build $(BUILD_PORTABLE) -j $(JOBS) --target loom $(PORTABLE_TESTS)
	tests/tools/check_portable.sh $(BUILD_PORTABLE)/tools/loom/loom $(foreach t,$(PORTABLE_TESTS),$(BUILD_PORTABLE)/tests/$(t))
	for level in baseline avx2 avx_vnni avx512 avx512_vnni avx512_bf16; do \
		if LOOM_ISA=$$level ./$(BUILD_PORTABLE)/tools/loom/loom --version 2>&1 | grep -q "does not run"; then \
			echo "== $$level: this CPU does not run it, skipped"; continue; fi; \
		echo "== $$level"; \
		for t in $(PORTABLE_TESTS); do \
			LOOM_ISA=$$level ./$(BUILD_PORTABLE)/tests/$$t --gtest_brief=1 \
				--gtest_filter=-$(PORTABLE_SKIPS)$$([ $$level = baseline ] && echo ":$(BASELINE_SKIPS)") || exit 1; \
		done; \
	done

# The chaos test (tests/serve/check_chaos.sh): 64 clients for CHAOS_SECONDS on --parallel 4 with
# disconnects at every stage, slow readers, slowloris senders, hostile bodies and bombs; then no
# crash, every slot free, the counters consistent, greedy answers as alone, RSS within its bound.
# `make test` runs it for 15 s, `make test-asan-ci` for 10 s under ASan + UBSan (chaos-asan).
CHAOS_SECONDS ?= 120
chaos: configure-release
	cmake --build $(BUILD_RELEASE) -j $(JOBS) --target loom
	tests/serve/check_chaos.sh $(CURDIR)/$(BUILD_RELEASE)/tools/loom/loom $(CURDIR) $(CHAOS_SECONDS) 64
# Under ASan the allocator's quarantine holds freed memory by design: the RSS bound is wide there.
chaos-asan: setup
	cmake --preset asan-ci >/dev/null
	cmake --build build/asan-ci -j $(JOBS) --target loom
	RSS_BOUND_KB=1048576 tests/serve/check_chaos.sh $(CURDIR)/build/asan-ci/tools/loom/loom \
		$(CURDIR) $(CHAOS_SECONDS) 64

# loom serve under load: 32 streaming clients for 60 s on a generated 150M model (scripts/loadtest.sh).
loadtest: configure-release
	cmake --build $(BUILD_RELEASE) -j $(JOBS) --target loom
	./scripts/loadtest.sh ./$(BUILD_RELEASE)/tools/loom/loom

test-asan: setup
	cmake --preset asan >/dev/null
	cmake --build $(BUILD_ASAN) -j $(JOBS)
	ctest --test-dir $(BUILD_ASAN) --output-on-failure -j $(JOBS)

# The sanitizer run CI can afford after `make test` (.ci/run): GGUF, tokenizers, engine, server,
# the fuzz corpus and the C ABI (a C program against libloom.so) under ASan + UBSan, built without debug info and without the benchmarks,
# the op tests and the tools' shell tests that `make test-asan` also runs. -O2, not less: GCC
# forms fused multiply-adds from a * b + c only from -O2 on, and the parity tests hold Loom to
# llama.cpp's roundings at that level (-O1 moves the RMS norm by an ulp, Q6_K's logits by 2e-4).
ASAN_CI_TESTS := gguf engine serve fuzz-replay
test-asan-ci: setup
	cmake --preset asan-ci >/dev/null
	cmake --build build/asan-ci -j $(JOBS) $(foreach t,$(ASAN_CI_TESTS),--target loom-$(t)-tests)
	for t in $(ASAN_CI_TESTS); do ./build/asan-ci/tests/loom-$$t-tests --gtest_brief=1 || exit 1; done
	cmake --build build/asan-ci -j $(JOBS) --target loom-shared
	tests/api/check_c_api.sh build/asan-ci -fsanitize=address,undefined
	$(MAKE) chaos-asan CHAOS_SECONDS=10

# libFuzzer (clang, ASan, UBSan) on each target for FUZZ_SECONDS: the GGUF reader (seeds: the
# files in ../shared/models, small files from the writer, tests/gguf/corpus), the tokenizers, the
# server's request parser, the chat templates, the Jinja engine and model loading from a lying
# GGUF (seeds: tests/fuzz/corpus/<target>; a target's fuzz/<target>.dict when there is one). What
# a fuzzer learns stays in build/fuzz/corpus/<target>; crashes go to build/fuzz/crashes (worth
# keeping: tests/gguf/corpus or tests/fuzz/corpus/<target>, replayed by make test).
FUZZ_TEXT_TARGETS := tokenizer request chat_template model_load jinja sequence_state grammar json_schema
fuzz: fuzz-gguf
	for target in $(FUZZ_TEXT_TARGETS); do \
		mkdir -p $(BUILD_FUZZ)/corpus/$$target && \
		LOOM_ROOT=$(CURDIR) ./$(BUILD_FUZZ)/$${target}_fuzz $(BUILD_FUZZ)/corpus/$$target \
			tests/fuzz/corpus/$$target -max_len=$(FUZZ_MAX_LEN) -max_total_time=$(FUZZ_SECONDS) \
			$$([ -f fuzz/$$target.dict ] && echo -dict=fuzz/$$target.dict) \
			-print_final_stats=1 -artifact_prefix=$(BUILD_FUZZ)/crashes/$$target- || exit 1; \
	done

# Long runs: each target for FUZZ_SECONDS in a build with UBSan only (ASan slows these targets
# two to four times), then every input the run kept replayed under ASan + UBSan.
BUILD_FUZZ_FAST := build/fuzz-fast
fuzz-long:
	./scripts/setup.sh fuzz
	cmake -S fuzz -B $(BUILD_FUZZ_FAST) -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=Release \
		-DLOOM_FUZZ_ASAN=OFF >/dev/null
	cmake -S fuzz -B $(BUILD_FUZZ) -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build $(BUILD_FUZZ_FAST) -j $(JOBS)
	cmake --build $(BUILD_FUZZ) -j $(JOBS)
	mkdir -p $(BUILD_FUZZ)/crashes
	for target in $(FUZZ_TEXT_TARGETS); do \
		mkdir -p $(BUILD_FUZZ)/corpus/$$target && \
		LOOM_ROOT=$(CURDIR) ./$(BUILD_FUZZ_FAST)/$${target}_fuzz $(BUILD_FUZZ)/corpus/$$target \
			tests/fuzz/corpus/$$target -max_len=$(FUZZ_MAX_LEN) -max_total_time=$(FUZZ_SECONDS) \
			$$([ -f fuzz/$$target.dict ] && echo -dict=fuzz/$$target.dict) \
			-print_final_stats=1 -artifact_prefix=$(BUILD_FUZZ)/crashes/$$target- || exit 1; \
		LOOM_ROOT=$(CURDIR) ./$(BUILD_FUZZ)/$${target}_fuzz -runs=0 -max_len=$(FUZZ_MAX_LEN) \
			$(BUILD_FUZZ)/corpus/$$target || exit 1; \
	done

fuzz-gguf:
	./scripts/setup.sh fuzz
	cmake -S fuzz -B $(BUILD_FUZZ) -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build $(BUILD_FUZZ) -j $(JOBS)
	rm -rf $(BUILD_FUZZ)/seeds
	mkdir -p $(BUILD_FUZZ)/seeds $(BUILD_FUZZ)/corpus/gguf $(BUILD_FUZZ)/crashes
	cp ../shared/models/*.gguf ../shared/models/vocab/*.gguf $(wildcard tests/gguf/corpus/*) $(BUILD_FUZZ)/seeds/
	./$(BUILD_FUZZ)/gguf_seeds $(BUILD_FUZZ)/seeds
	./$(BUILD_FUZZ)/gguf_fuzz $(BUILD_FUZZ)/corpus/gguf $(BUILD_FUZZ)/seeds -dict=fuzz/gguf.dict \
		-max_len=$(FUZZ_MAX_LEN) -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
		-artifact_prefix=$(BUILD_FUZZ)/crashes/

format:
	git ls-files '*.cpp' '*.h' | xargs clang-format -i

clean:
	rm -rf build

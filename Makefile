# One-command entry points. CMake does the real work; this file only names the jobs.
BUILD ?= build
JOBS ?= 2
CMAKE_FLAGS ?= -G Ninja -DCMAKE_BUILD_TYPE=Release

.PHONY: deps configure build test demo bench gpu-test gpu-carry gpu-pack gpu-corpus gpu-replay gpu-record fuzz sanitize python-test clean format format-check

deps:
	./scripts/dev/setup.sh

configure:
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# The whole test suite (what .ci/run runs): formatting, every CPU test (with headless
# Chromium for the HTML report's test), then the Python package in a fresh venv (pytest).
test: format-check build
	./scripts/dev/setup.sh --browser
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS) -LE gpu
	./scripts/dev/python_test.sh

# The Python package alone: a fresh venv, pip install ".[test]", pytest.
python-test: deps
	./scripts/dev/python_test.sh

# clang-format 19.1.7 (pinned, from PyPI into build-format/): check, or fix in place.
format-check: deps
	./scripts/dev/check_format.sh
format:
	./scripts/dev/check_format.sh --fix

# The main job on a bundled real trace: PyTorch SDPA's math backend on an H200.
# Builds only what it runs: the attnprof CLI without CUDA targets or tests
# (doctor's output is the same; record and bench's GPU side need `make build`).
DEMO_BUILD ?= build-demo
demo: deps
	@echo "make demo: building the attnprof CLI only (no CUDA kernels, no tests) in $(DEMO_BUILD)/"
	cmake -S . -B $(DEMO_BUILD) -G Ninja -DCMAKE_BUILD_TYPE=Release -DATTNPROF_WITH_CUDA=OFF \
	  -DATTNPROF_BUILD_TESTS=OFF -DATTNPROF_BUILD_BENCHMARKS=OFF
	cmake --build $(DEMO_BUILD) -j $(JOBS) --target attnprof
	./$(DEMO_BUILD)/attnprof doctor examples/traces/sdpa_math.json

# Reader throughput and peak memory on a large synthetic trace built from the real ones.
bench: deps build
	./scripts/dev/trace_throughput.sh $(BUILD)

fuzz:
	./scripts/dev/fuzz_reader.sh

# Every CPU test under AddressSanitizer and UndefinedBehaviorSanitizer (CPU part only).
sanitize: deps
	cmake --preset sanitize
	cmake --build --preset sanitize
	ctest --preset sanitize -j $(JOBS)

clean:
	rm -rf $(BUILD)

# On a GPU machine: build, run the GPU tests, print the benchmark tables.
gpu-test: build
	./scripts/gpu/gpu_check.sh $(BUILD)

# What the GPU check needs from a build, small enough to carry to a GPU machine
# (the device tool takes 64 MiB; the whole build is larger): then, there,
# `scripts/gpu/gpu_check.sh gpu-carry` (and `scripts/record/gpu_record_check.sh gpu-carry` for the recorder).
GPU_CARRY ?= gpu-carry
gpu-carry: build
	rm -rf $(GPU_CARRY) && mkdir -p $(GPU_CARRY)/tests/fused $(GPU_CARRY)/tests/capture $(GPU_CARRY)/tests/attention
	cp $(BUILD)/attnprof $(BUILD)/libattnprof_bench_cuda.so $(BUILD)/libattnprof_fused.so $(BUILD)/libattnprof_inject.so $(BUILD)/attnprof_fused_lab \
	  $(BUILD)/attnprof_record_overhead $(BUILD)/attnprof_record_demo $(GPU_CARRY)/
	cp -r $(BUILD)/runtime-libs $(GPU_CARRY)/
	cp $(BUILD)/tests/fused/fused_forward_test $(BUILD)/tests/fused/fused_wgmma_test $(GPU_CARRY)/tests/fused/
	cp $(BUILD)/tests/capture/recorder_gpu_test $(GPU_CARRY)/tests/capture/
	cp $(BUILD)/tests/attention/attention_cuda_test $(GPU_CARRY)/tests/attention/
	du -sh $(GPU_CARRY)

# gpu-carry gzipped (8.5 of its 28 MB on 2026-12-04) into gpu-pack/, for device calls whose working tree
# would pass the device tool's 64 MiB with gpu-carry itself: carry gpu-pack and run
# `scripts/gpu/run_spec.sh SPEC`, which unpacks it (docs/gpu-runs.md). Wheels for a call go in gpu-pack/dist.
GPU_PACK ?= gpu-pack
gpu-pack: gpu-carry
	mkdir -p $(GPU_PACK) && tar -czf $(GPU_PACK)/gpu-carry.tgz $(GPU_CARRY) && du -sh $(GPU_PACK)

# On a GPU machine with PyTorch and transformers, from a carried build: real
# programs (Hugging Face models kept out of the repository, unfused and fused
# twins) traced and checked against how they were built; prints the estimate
# table. CORPUS_SET=wild: programs beyond one plain forward (generate, autocast,
# padding, torch.compile, flex_attention, encoder-decoders, ALiBi; ~100 s of device
# time). CORPUS_SET=corpus remakes tests/data/corpus instead.
CORPUS_SET ?= unseen
# Programs made at once; above 1 they share the GPU, so keep 1 where the traces' times matter
# (CORPUS_SET=corpus, the estimate table); the wild set's checks are counts: 4 there.
CORPUS_JOBS ?= 1
gpu-corpus:
	./scripts/corpus/gpu_corpus.sh $(GPU_CARRY) gpu-out/corpus-$(CORPUS_SET) --set $(CORPUS_SET) --jobs $(CORPUS_JOBS)

# attnprof record on a GPU machine, from gpu-carry: endings, capture windows, child processes
# (gpu_record_check.sh); a two-minute training loop's memory, its step window, a SIGKILL; the
# 500k-launch loop's overhead beside torch.profiler (about 12 minutes in all).
gpu-record:
	./scripts/record/gpu_record_check.sh $(GPU_CARRY) gpu-out/record
	./scripts/record/gpu_training_check.sh $(GPU_CARRY) gpu-out/training training
	./scripts/record/gpu_training_check.sh $(GPU_CARRY) gpu-out/overhead overhead

# doctor --replay on real programs (on a GPU machine, from gpu-carry): replays within 15% of the
# traced times, savings within 15% of the fused twin traces' (scripts/corpus/replay_check.py).
gpu-replay:
	./scripts/corpus/gpu_replay.sh $(GPU_CARRY) gpu-out/replay

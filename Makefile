# repro — build, run, test.  `make run` and `make check` set themselves up.
#
# Numerics flags are a product promise (docs/DESIGN.md, determinism contract):
# no -ffast-math, no -march=native, and -ffp-contract=off so the compiler
# never fuses a*b+c into an FMA behind our back; a fused multiply-add, where
# wanted, is written as fmaf() in the code.

BUILD   ?= build
REPRO_SOVERSION = 0
CC      ?= cc
OPT     ?= -O2
NUMERICS = -ffp-contract=off -fno-fast-math
WARN     = -Wall -Wextra -Werror
SAN     ?=
PKGS     = openssl libgit2 jansson inih libxxhash

# Probes are all $(shell ...): a bare $(which nvcc) is silently empty.
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CHECK_CFLAGS := $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS   := $(shell pkg-config --libs check 2>/dev/null)
NVCC     := $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)

CUDA_HOME := $(if $(NVCC),$(patsubst %/bin/,%,$(dir $(NVCC))))
# cuDNN: $(CUDNN_HOME) (its include/ and lib/), the system's and CUDA's
# folders, or the pip wheel nvidia-cudnn-cu13 (python3's nvidia/cudnn/,
# asked only when no cudnn.h is found elsewhere). The wheel has
# libcudnn.so.9 but no libcudnn.so, so the library is linked by soname
# (-l:libcudnn.so.9) when the unversioned name is missing.
CUDNN_SYS_H := $(wildcard /usr/include/cudnn.h /usr/local/cuda/include/cudnn.h /usr/include/*/cudnn.h)
CUDNN_PIP := $(if $(CUDNN_HOME)$(CUDNN_SYS_H),,$(if $(NVCC),$(shell python3 -c \
    'import nvidia.cudnn as m; print(list(m.__path__)[0])' 2>/dev/null)))
CUDNN_DIRS := $(CUDNN_HOME) $(CUDNN_PIP)
CUDNN_H  := $(firstword $(wildcard $(CUDNN_DIRS:%=%/include/cudnn.h)) $(CUDNN_SYS_H))
CUDNN_LIBFILE := $(firstword $(wildcard $(foreach d,$(CUDNN_DIRS:%=%/lib) $(CUDNN_DIRS:%=%/lib64) \
    $(CUDA_HOME)/lib64 /usr/lib/x86_64-linux-gnu /usr/lib/aarch64-linux-gnu /usr/lib64 /usr/lib,\
    $(d)/libcudnn.so $(d)/libcudnn.so.9)))
CUDNN_LIBDIR := $(patsubst %/,%,$(dir $(CUDNN_LIBFILE)))
CUDNN_LINK = -L$(CUDNN_LIBDIR) -Wl,-rpath,$(CUDNN_LIBDIR) \
             $(if $(filter %/libcudnn.so,$(CUDNN_LIBFILE)),-lcudnn,-l:libcudnn.so.9)

# The CUDA backend (kernels/cuda) is built whenever nvcc and cuDNN are found
# (`make NVCC=` builds CPU-only; sanitizer builds are CPU-only too: the CUDA
# runtime and ASan's shadow memory do not mix). Its numerics flags mirror the
# CPU's: --fmad=false so nvcc never contracts a*b + c into an FMA, IEEE
# division and square root, no flush-to-zero. sm_80 and sm_90 code plus
# PTX for later GPUs; cudart and cuDNN are linked into librepro (.a users
# add the same -l flags) and repro (cuBLAS is only dlopen'ed for its version).
HAVE_CUDA := $(if $(SAN),,$(if $(and $(NVCC),$(CUDNN_H),$(CUDNN_LIBFILE)),1))
# Data parallel (harness/core/dist.c) is built on Open MPI when mpicc is
# found (libopenmpi-dev); without it, or under sanitizers (Open MPI's own
# allocations would fail LeakSanitizer), ranks > 1 exits 3 saying so.
MPICC    := $(shell command -v mpicc 2>/dev/null)
HAVE_MPI := $(if $(SAN),,$(if $(MPICC),1))
MPI_CFLAGS := $(if $(HAVE_MPI),$(shell $(MPICC) --showme:compile 2>/dev/null) -DREPRO_HAVE_MPI)
MPI_LIBS   := $(if $(HAVE_MPI),$(shell $(MPICC) --showme:link 2>/dev/null))
NVCC_GENCODE = -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
               -gencode arch=compute_90,code=compute_90
NVCCFLAGS = -std=c++17 -g $(OPT) --fmad=false -prec-div=true -prec-sqrt=true -ftz=false \
            -Werror all-warnings -Xcompiler -Wall,-Wextra,-Werror,-fPIC $(NVCC_GENCODE) \
            -Iinclude -I. -I$(BUILD) -I$(dir $(CUDNN_H)) -DREPRO_HAVE_CUDA
CUDA_LINK = -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 $(CUDNN_LINK) -lcudart -lstdc++
CUDA_LIBS = $(if $(HAVE_CUDA),$(CUDA_LINK))

# -fPIC: the same objects go into librepro.a and librepro.so.
CFLAGS   = -std=c11 -D_GNU_SOURCE -g $(OPT) $(NUMERICS) $(WARN) $(SAN) -fPIC \
           -Iinclude -Iharness -I. -I$(BUILD) $(PKG_CFLAGS) $(if $(HAVE_CUDA),-DREPRO_HAVE_CUDA)
LDLIBS   = $(PKG_LIBS) $(CUDA_LIBS) $(MPI_LIBS) -lpthread -lm
LDFLAGS  = $(SAN)

# The library is every layer below the CLI plus the kernels; the CLI
# (harness/cli/) is the `repro` program linked against it.
LAYERS   = util record core analysis history golden bisect verify
LIB_SRC  = $(foreach l,$(LAYERS),$(wildcard harness/$(l)/*.c)) $(wildcard kernels/*.c kernels/cpu/*.c) \
           $(if $(HAVE_CUDA),$(wildcard kernels/cuda/*.c))
CUDA_SRC = $(if $(HAVE_CUDA),$(wildcard kernels/cuda/*.cu))
LIB_OBJ  = $(LIB_SRC:%.c=$(BUILD)/%.o) $(CUDA_SRC:%.cu=$(BUILD)/%.o)
CLI_SRC  = $(wildcard harness/cli/*.c)
CLI_OBJ  = $(CLI_SRC:%.c=$(BUILD)/%.o)
TEST_SRC = $(wildcard tests/*.c)
SUITE_SRC = $(filter-out tests/check_main.c,$(wildcard tests/check_*.c))
TEST_OBJ = $(TEST_SRC:%.c=$(BUILD)/%.o)
BENCH_SRC = $(wildcard bench/*.c)
# Header dependencies are tracked per object (-MMD): editing one header
# rebuilds only what includes it.
DEPFLAGS = -MMD -MP

.PHONY: all run check check-run bench asan tsan clean deps test-deps portability fuzz fuzz-smoke \
        fuzz-bins install examples
all: $(BUILD)/repro repro
	@echo "✓ repro (CPU backend)"
	@if [ -n "$(HAVE_CUDA)" ]; then echo "✓ CUDA backend: compiled with $(NVCC) and $(CUDNN_H) (sm_80, sm_90 + PTX); NOT verified on hardware: tests/gpu/run.sh on a GPU machine does that"; \
	 elif [ -n "$(SAN)" ]; then echo "✗ CUDA backend: not built (sanitizer build: CPU only)"; \
	 elif [ -z "$(NVCC)" ]; then echo "✗ CUDA backend: not built (no nvcc: CPU build only)"; \
	 elif [ -z "$(CUDNN_H)" ]; then echo "✗ CUDA backend: not built (nvcc found, cuDNN's cudnn.h not: CPU build only; CUDNN_HOME=DIR)"; \
	 else echo "✗ CUDA backend: not built (cudnn.h found, libcudnn.so(.9) not: CPU build only; CUDNN_HOME=DIR)"; fi
	@if [ -n "$(HAVE_MPI)" ]; then echo "✓ data parallel: built on Open MPI ($(MPICC)); repro run --ranks N"; \
	 elif [ -n "$(SAN)" ]; then echo "✗ data parallel: not built (sanitizer build)"; \
	 else echo "✗ data parallel: not built (no mpicc: apt-get install libopenmpi-dev openmpi-bin)"; fi

deps:
	@./scripts/ensure-deps.sh

# The main job: prove both shipped experiments reproduce (two fresh-process
# runs each, compared bit for bit with each other and with the golden).
run: deps
	@$(MAKE) --no-print-directory all
	./repro check experiments/mlp.ini
	./repro check experiments/cnn.ini

# What the tests need as well (bubblewrap, Debian's python3 with NumPy and
# PyTorch): installed as root, else named; a test without it skips, and the
# run ends with the count of skips and why (scripts/skip-summary.sh).
check: test-deps
	@$(MAKE) --no-print-directory check-run

test-deps:
	@./scripts/ensure-deps.sh --tests

# The layer rule (docs/DESIGN.md) and its self-test, then the suite. The
# examples and the staged install they are built against are part of it:
# tests run the examples (REPRO_EXAMPLES) and build programs of their own
# against the install (REPRO_STAGE; REPRO_STAGE_DEFAULT is the default
# install's layout, under a DESTDIR). The Python tests get the library to
# load (REPRO_LIB), except in sanitizer builds: python3 cannot load an ASan
# library (they say "skipped" there). Last, the GPU check's own test
# (tests/gpu/selftest.sh: compiles tests/gpu/, stages, dry-runs the device
# script with a fake nvidia-smi; 20-35 s on a warm build, plus ~2 min once for
# the fallback's objects; "skipped: no nvcc" where there is none).
# Every skip appends a line to $(SKIP_LOG) (REPRO_SKIP_LOG); the last line
# of the run counts them by reason, "0 skipped" when none, also after a
# failure.
SKIP_LOG = $(abspath $(BUILD))/skips.log
SKIP_SUMMARY = scripts/skip-summary.sh $(SKIP_LOG)
check-run: $(BUILD)/check_all $(BUILD)/repro examples $(BUILD)/stage-default.stamp
	@scripts/check-layers.sh --objects $(BUILD)
	@scripts/check-layers.sh --self-test
	@scripts/check-docs.sh --repro $(BUILD)/repro && scripts/check-docs.sh --self-test --repro $(BUILD)/repro
	@scripts/skip-summary.sh --self-test >/dev/null || scripts/skip-summary.sh --self-test
	@$(MAKE) --no-print-directory -s lib-names-self-test
	@rm -f $(SKIP_LOG)
	REPRO_BIN=$(BUILD)/repro REPRO_EXAMPLES=$(BUILD)/examples REPRO_STAGE=$(STAGE) \
	    REPRO_STAGE_DEFAULT=$(STAGE_DEFAULT) \
	    REPRO_LIB=$(if $(SAN),,$(abspath $(BUILD))/librepro.so) REPRO_SKIP_LOG=$(SKIP_LOG) \
	    $(BUILD)/check_all || { $(SKIP_SUMMARY); exit 1; }
	@REPRO_SKIP_LOG=$(SKIP_LOG) BUILD=$(BUILD) MAKE="$(MAKE)" \
	    $(if $(SAN),REPRO_GPU_SELFTEST_SKIP="sanitizer build (CPU only)") tests/gpu/selftest.sh || \
	    { $(SKIP_SUMMARY); exit 1; }
	@$(SKIP_SUMMARY)

# ---- the library as users get it -------------------------------------------
# `make install PREFIX=/opt/repro DESTDIR=...`: the CLI, the public headers,
# librepro.a, librepro.so and repro.pc, so that
#     cc prog.c $$(pkg-config --cflags --libs repro)
# builds a program against it; and the Python client (python/repro/) where
# $(PYTHON), the interpreter the build found, searches for that prefix
# (scripts/install-client.sh asks its sysconfig: Debian's python3 3.11
# searches /usr/local/lib/python3.11/dist-packages for /usr/local; PEP 668
# keeps pip out of the system's site-packages, so the files are copied),
# saying what to put on PYTHONPATH for a prefix it does not search, and
# running ldconfig for a system prefix (docs/python.md).
PREFIX  ?= /usr/local
DESTDIR ?=
PY_SRC   = $(wildcard python/repro/*.py)
REPRO_PKG_VERSION := $(shell sed -n 's/^\#define REPRO_VERSION "\(.*\)"/\1/p' harness/util/version.h)

$(BUILD)/repro.pc: FORCE
	@mkdir -p $(BUILD)
	@{ echo 'prefix=$(PREFIX)'; echo 'libdir=$${prefix}/lib'; echo 'includedir=$${prefix}/include'; echo; \
	   echo 'Name: repro'; \
	   echo 'Description: record training runs and prove them reproducible (librepro)'; \
	   echo 'Version: $(REPRO_PKG_VERSION)'; \
	   echo 'Requires.private: $(PKGS)'; \
	   echo 'Libs: -L$${libdir} -Wl,-rpath,$${libdir} -lrepro'; \
	   echo 'Libs.private: $(MPI_LIBS) -lpthread -lm'; \
	   echo 'Cflags: -I$${includedir}'; } > $@.tmp
	@cmp -s $@.tmp $@ || mv $@.tmp $@; rm -f $@.tmp

install: $(BUILD)/repro $(BUILD)/librepro.a $(BUILD)/librepro.so $(BUILD)/repro.pc
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/include/repro \
	    $(DESTDIR)$(PREFIX)/lib/pkgconfig
	install -m 755 $(BUILD)/repro $(DESTDIR)$(PREFIX)/bin/repro
	install -m 644 include/repro/*.h $(DESTDIR)$(PREFIX)/include/repro/
	install -m 644 $(BUILD)/librepro.a $(DESTDIR)$(PREFIX)/lib/librepro.a
	install -m 755 $(BUILD)/librepro.so $(DESTDIR)$(PREFIX)/lib/librepro.so.$(REPRO_SOVERSION)
	ln -sf librepro.so.$(REPRO_SOVERSION) $(DESTDIR)$(PREFIX)/lib/librepro.so
	install -m 644 $(BUILD)/repro.pc $(DESTDIR)$(PREFIX)/lib/pkgconfig/repro.pc
	@scripts/install-client.sh '$(PYTHON)' '$(PREFIX)' '$(DESTDIR)' $(PY_SRC)

# The examples are built as a user builds them: against a staged install,
# through pkg-config, seeing only <repro/...>.
# tp_linear is an MPI program: built where Open MPI is (not under sanitizers).
EXAMPLES = $(filter-out $(if $(HAVE_MPI),,tp_linear),\
           $(sort $(patsubst examples/%/,%,$(dir $(wildcard examples/*/*.c)))))
STAGE    = $(abspath $(BUILD))/stage
examples: $(EXAMPLES:%=$(BUILD)/examples/%)

$(BUILD)/stage.stamp: $(BUILD)/repro $(BUILD)/librepro.a $(BUILD)/librepro.so $(PY_SRC) \
                      scripts/install-client.sh scripts/python-site.py
	@$(MAKE) --no-print-directory install PREFIX=$(STAGE) DESTDIR= >/dev/null
	@touch $@

# A second staging laid out as the default install (PREFIX=/usr/local under
# DESTDIR): tests/check_pysubmit.c stands it in for /usr/local.
STAGE_DEFAULT = $(abspath $(BUILD))/stage-default
$(BUILD)/stage-default.stamp: $(BUILD)/stage.stamp
	@rm -rf $(STAGE_DEFAULT)
	@$(MAKE) --no-print-directory install PREFIX=/usr/local DESTDIR=$(STAGE_DEFAULT) >/dev/null
	@touch $@

$(BUILD)/examples/%: examples/%/*.c $(BUILD)/stage.stamp
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE $(OPT) $(NUMERICS) $(WARN) $(SAN) -o $@ $(filter %.c,$^) \
	    $$(PKG_CONFIG_PATH=$(STAGE)/lib/pkgconfig pkg-config --cflags --libs repro) \
	    $(EXAMPLE_MPI) -lpthread -lm
$(BUILD)/examples/tp_linear: EXAMPLE_MPI = $(MPI_CFLAGS) $(MPI_LIBS)

# The whole suite under AddressSanitizer + UndefinedBehaviorSanitizer. (Its
# Python tests are skipped, saying so: python3 cannot load an ASan library.)
asan: deps
	@$(MAKE) --no-print-directory BUILD=build-asan OPT=-O1 \
	    SAN="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer" \
	    check-run CK_TIMEOUT_MULTIPLIER=4

# The suites of the code that hands work between threads (the pool's job
# claims, the recorder's hasher pipeline and leaf sharing, the loader's
# workers) under ThreadSanitizer: a data race fails it, and TSan's
# scheduling shakes out orderings a quiet machine never shows (it found a
# double-run chunk once, and a condition variable destroyed after free).
# train runs the cooperative loader end to end: kernel threads filling
# loader rows between jobs (it takes ~4 minutes under TSan).
TSAN_SUITES = pool record loader loader_coop train
tsan: deps
	@$(MAKE) --no-print-directory BUILD=build-tsan OPT=-O1 SAN=-fsanitize=thread \
	    build-tsan/check_all build-tsan/repro
	@for s in $(TSAN_SUITES); do \
	    TSAN_OPTIONS=halt_on_error=1 CK_RUN_SUITE=$$s CK_TIMEOUT_MULTIPLIER=4 \
	    REPRO_BIN=build-tsan/repro build-tsan/check_all || exit 1; done

# Side by side with PyTorch (bench/torch_ref.py, run by $(PYTHON)); without
# PyTorch the bench says so and prints repro's figures.
# The first python3 that imports torch: the one on PATH (a virtualenv,
# pyenv) or Debian's, which python3-torch installs into; else python3.
PYTHON ?= $(or $(shell for p in python3 /usr/bin/python3; do \
                  $$p -c 'import torch' >/dev/null 2>&1 && { echo $$p; break; }; done),python3)
# Then the price of repro.ddp's world-size-invariant gradients beside plain
# DDP at world sizes 1, 2, 4 (bench/ddp_cost.py; docs/python.md).
# Then tensor parallel: mlp steps/s at tp 1, tp 2 and data parallel 2, and
# the TP-invariant chain against the ring all-reduce (bench/tp_cost.sh).
# Then the size of proof: scripts/trace-size.sh (30,000- and 3,000-step mlp
# traces, golden, diff time and peak memory, each bound ok or FAIL), where
# the tree has it; a missed bound is printed, as the bench's, not an error.
bench: deps
	@$(MAKE) --no-print-directory $(BUILD)/bench_train $(BUILD)/repro $(BUILD)/librepro.so
	$(BUILD)/bench_train $(BUILD)/repro $(PYTHON) bench/torch_ref.py
	@echo; REPRO_LIB=$(abspath $(BUILD))/librepro.so $(PYTHON) bench/ddp_cost.py \
	    || echo "ddp cost: exit $$? (above)"
	@echo; sh bench/tp_cost.sh $(BUILD)/repro || echo "tp cost: exit $$? (above)"
	@echo; if [ -f scripts/trace-size.sh ]; then \
	    sh scripts/trace-size.sh $(BUILD)/repro || echo "trace size: exit $$? (1: a bound missed, above)"; \
	else echo "trace size: not available (no scripts/trace-size.sh in this tree); its goals, a" \
	    "30,000-step mlp at the default level: trace <= 30 MB, golden <= 6 MB, repro diff <= 2 s" \
	    "and <= 64 MB peak, peak within 10% of the 3,000-step diff's"; fi

# Portable bits: the CPU path must give the committed goldens' bits whatever
# the compiler, optimization level or vector path (no FMA contraction, fixed
# reduction orders, vectorization only across independent outputs). Builds
# each variant into its own directory (CPU-only: NVCC= ) and, under every vector path this CPU
# has (REPRO_ISA, kernels/isa.h), requires a bitwise match with the golden
# and runs the kernel suites; the AVX-512 objects must hold no FMA
# instruction even where the CPU cannot run them.
PORT_VARIANTS = gcc:-O2 gcc:-O3 clang:-O2
PORT_EXPERIMENTS = experiments/mlp.ini experiments/cnn.ini
PORT_SUITES = kernels conv_algos atomic backend isa philox hash
# sse2 always; avx2 / avx512 where /proc/cpuinfo lists avx2 / avx512f
PORT_ISAS = sse2 $(shell grep -qw avx2 /proc/cpuinfo 2>/dev/null && echo avx2) \
            $(shell grep -qw avx512f /proc/cpuinfo 2>/dev/null && echo avx512)
portability: deps
	@command -v clang >/dev/null || { echo "✗ clang not found: apt-get install clang"; exit 3; }
	@set -e; for v in $(PORT_VARIANTS); do \
	    cc=$${v%%:*}; opt=$${v#*:}; b=build-port-$$cc$$opt; \
	    tests=; [ "$$v" = "gcc:-O2" ] && tests=$$b/check_all; \
	    $(MAKE) --no-print-directory BUILD=$$b CC=$$cc OPT=$$opt NVCC= $$b/repro $$tests >$$b.log 2>&1 || \
	        { cat $$b.log; echo "✗ $$cc $$opt: build failed"; exit 1; }; \
	    if objdump -d $$b/kernels/cpu/simd_*.o $$b/kernels/philox_*.o $$b/harness/record/stats.o | grep -q 'vfn\?m\(add\|sub\)[0-9]'; then \
	        echo "✗ $$cc $$opt: an FMA instruction in a vector path (kernels, tensor stats)"; exit 1; fi; \
	    for isa in $(PORT_ISAS); do \
	        for e in $(PORT_EXPERIMENTS); do \
	            if REPRO_ISA=$$isa $$b/repro check $$e --runs 1 --require-golden >$$b.log 2>&1; then \
	                echo "✓ $$cc $$opt $$isa: $$e reproduces its golden bit for bit"; \
	            else cat $$b.log; echo "✗ $$cc $$opt $$isa: $$e does not reproduce its golden"; exit 1; fi; \
	        done; \
	        [ "$$v" = "gcc:-O2" ] || continue; \
	        for s in $(PORT_SUITES); do \
	            REPRO_ISA=$$isa CK_RUN_SUITE=$$s REPRO_BIN=$$b/repro $$b/check_all >$$b.log 2>&1 || \
	                { cat $$b.log; echo "✗ $$cc $$opt $$isa: suite $$s fails"; exit 1; }; \
	        done; \
	        echo "✓ $$cc $$opt $$isa: suites $(PORT_SUITES) pass"; \
	    done; \
	done

# libFuzzer targets for the parsers that read other people's files
# (tests/fuzz/fuzz_<target>.c, seeds in tests/fuzz/corpus/<target>/): the
# library is rebuilt with clang into build-fuzz/ with
# -fsanitize=fuzzer-no-link,address,undefined and each target linked with
# -fsanitize=fuzzer. Each runs FUZZ_SECONDS; new inputs go to
# build-fuzz/corpus/<target>, crashes to build-fuzz/crash-<target>-*
# (turn each into a row of tests/check_bad_inputs.c). Needs clang's
# runtime (Debian: libclang-rt-14-dev, or clang's own package).
FUZZ_SECONDS ?= 60
FUZZ_TARGETS = config trace manifest
FUZZ_SAN = -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
fuzz: deps
	@command -v clang >/dev/null || { echo "✗ clang not found: apt-get install clang"; exit 3; }
	@$(MAKE) --no-print-directory BUILD=build-fuzz CC=clang OPT=-O1 SAN="$(FUZZ_SAN)" fuzz-bins
	@set -e; for t in $(FUZZ_TARGETS); do \
	    mkdir -p build-fuzz/corpus/$$t; \
	    if build-fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	        -artifact_prefix=build-fuzz/crash-$$t- build-fuzz/corpus/$$t tests/fuzz/corpus/$$t \
	        >build-fuzz/fuzz_$$t.log 2>&1; then \
	        echo "✓ fuzz $$t: $$(grep -o 'Done [0-9]* runs in [0-9]* second(s)' build-fuzz/fuzz_$$t.log), no crash"; \
	    else tail -n 40 build-fuzz/fuzz_$$t.log; echo "✗ fuzz $$t: crash (build-fuzz/crash-$$t-*)"; exit 1; fi; \
	done

# The CI smoke: the same, 10 s a target.
fuzz-smoke:
	@$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=10

fuzz-bins: $(FUZZ_TARGETS:%=$(BUILD)/fuzz_%)

$(BUILD)/fuzz_%: $(BUILD)/tests/fuzz/fuzz_%.o $(BUILD)/librepro.a
	$(CC) $(subst fuzzer-no-link,fuzzer,$(SAN)) -o $@ $^ $(LDLIBS)

repro: $(BUILD)/repro
	@cp $< $@

clean:
	rm -rf build build-asan build-tsan build-port-* build-fuzz repro

# Build flags are tracked: a change rebuilds everything, and the compiler,
# its version and the flags are compiled into the binary (they change bits).
$(BUILD)/build_info.h: FORCE
	@mkdir -p $(BUILD)
	@{ echo '#define REPRO_CC "$(CC)"'; \
	   echo '#define REPRO_CC_VERSION "'"$$($(CC) --version | head -n 1 | sed 's/"/\\"/g')"'"'; \
	   echo '#define REPRO_CFLAGS "$(strip $(CFLAGS))"'; \
	   echo '#define REPRO_LIBGIT2_VERSION "'"$$(pkg-config --modversion libgit2 2>/dev/null)"'"'; \
	   echo '#define REPRO_NVCC_VERSION "$(if $(HAVE_CUDA),'"$$($(NVCC) --version | grep -o 'release [^,]*, V[0-9.]*')"')"'; \
	   echo '#define REPRO_NVCCFLAGS "$(if $(HAVE_CUDA),$(strip $(NVCCFLAGS)))"'; } > $@.tmp
	@cmp -s $@.tmp $@ || mv $@.tmp $@; rm -f $@.tmp
FORCE:

# build_info.h is an order-only prerequisite: -MMD records it for the few
# files that include it, so a flags change rebuilds those (and CFLAGS itself
# is tracked by the stamp below).
$(BUILD)/%.o: %.c $(BUILD)/cflags.stamp | $(BUILD)/build_info.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DEPFLAGS) -c $< -o $@

# Only dist.c sees <mpi.h>.
$(BUILD)/harness/core/dist.o: CFLAGS += $(MPI_CFLAGS)

# The CUDA backend's objects: nvcc, with the same stamp and -MMD deps.
$(BUILD)/%.o: %.cu $(BUILD)/cflags.stamp | $(BUILD)/build_info.h
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) $(DEPFLAGS) -c $< -o $@

# A change of CFLAGS (or of the CUDA flags) rebuilds every object (flags
# change bits).
$(BUILD)/cflags.stamp: FORCE
	@mkdir -p $(BUILD)
	@echo '$(CC) $(CFLAGS) $(MPI_CFLAGS) $(if $(HAVE_CUDA),$(NVCC) $(NVCCFLAGS))' > $@.tmp
	@cmp -s $@.tmp $@ || mv $@.tmp $@; rm -f $@.tmp

# ar keeps members by file name alone (harness/util/x.o and kernels/x.o are
# both "x.o"), and `ar r` replaces by that name: an incremental update or
# another ar silently keeps one of the two. So no two library sources may
# share a base name: checked before either archive is made, naming both.
# (make lib-names-self-test shows the check refusing a planted pair.)
LIB_DUP_NAMES = $(shell printf '%s\n' $(LIB_SRC) $(CUDA_SRC) | awk 'BEGIN { ORS = "; " } \
    { b = $$0; sub(/.*\//, "", b); sub(/\.[^.]*$$/, "", b); \
      if (b in first) print first[b] " and " $$0 " (both " b ".o)"; else first[b] = $$0 }')
.PHONY: lib-names lib-names-self-test
lib-names:
	@$(if $(strip $(LIB_DUP_NAMES)),echo "✗ librepro.a: library sources share a base name (ar \
	    keeps objects by name alone): $(LIB_DUP_NAMES)rename one of each" >&2; exit 1,:)
lib-names-self-test:
	@out=$$($(MAKE) --no-print-directory -s lib-names LIB_SRC="harness/util/lines.c \
	    harness/core/lines.c harness/util/npy.c" CUDA_SRC=kernels/cuda/npy.cu 2>&1); rc=$$?; \
	if [ $$rc -ne 0 ] && echo "$$out" | grep -q 'harness/util/lines.c and harness/core/lines.c' && \
	    echo "$$out" | grep -q 'harness/util/npy.c and kernels/cuda/npy.cu'; then \
	    echo "✓ lib-names self-test: a planted pair of same-named sources is refused, naming both"; \
	else echo "✗ lib-names self-test: exit $$rc: $$out"; exit 1; fi

$(BUILD)/librepro.a: $(LIB_OBJ) | lib-names
	@rm -f $@
	ar rcs $@ $(LIB_OBJ)

$(BUILD)/librepro.so: $(LIB_OBJ)
	$(CC) $(LDFLAGS) -shared -Wl,-soname,librepro.so.$(REPRO_SOVERSION) -Wl,--no-undefined \
	    -o $@ $^ $(LDLIBS)

$(BUILD)/repro: $(CLI_OBJ) $(BUILD)/librepro.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

# Every tests/check_<module>.c exports <module>_suite(); the runner's list is
# generated from the file names so adding a suite touches no shared file.
$(BUILD)/suites.inc: FORCE
	@mkdir -p $(BUILD)
	@for f in $(SUITE_SRC); do \
	    n=$$(basename $$f .c); echo "SUITE($${n#check_})"; done > $@.tmp
	@cmp -s $@.tmp $@ || mv $@.tmp $@; rm -f $@.tmp

$(BUILD)/tests/check_main.o: $(BUILD)/suites.inc
# Test objects add Check's flags in their own rule: a target-specific CFLAGS
# would leak into build_info.h (a prerequisite) and rebuild everything.
# A suite's own extra flags are TEST_XFLAGS_<name>: check_philox runs the
# AVX-512 Philox template's 64-byte vectors in AVX2 code (static functions),
# and GCC's note on their calling convention cannot be silenced in the file.
TEST_XFLAGS_check_philox = -Wno-psabi
$(BUILD)/tests/%.o: tests/%.c $(BUILD)/cflags.stamp | $(BUILD)/build_info.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DEPFLAGS) $(CHECK_CFLAGS) $(TEST_XFLAGS_$*) -Itests -c $< -o $@

# -lz: the HTML report's screenshot test decodes PNG (tests/tu_png.c).
$(BUILD)/check_all: $(TEST_OBJ) $(BUILD)/librepro.a
	$(CC) $(LDFLAGS) -o $@ $^ $(CHECK_LIBS) -lz $(LDLIBS)

# The GPU check programs (tests/gpu/run.sh runs them; they need a GPU).
$(BUILD)/check_cuda_ops $(BUILD)/step_time: $(BUILD)/%: $(BUILD)/tests/gpu/%.o $(BUILD)/librepro.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# ---- what tests/gpu/run.sh --prepare stages (docs/gpu-check.md) ------------
# repro, librepro.so and the two check programs as the GPU machine gets
# them: the main build's objects, except that data parallel is left out
# (dist.c compiled once more without Open MPI, whose plugins are dlopen'ed
# where ldd cannot see them to stage them) and nothing links MPI.
GPU_DIR      = $(BUILD)/gpu
GPU_LIB_OBJ  = $(filter-out $(BUILD)/harness/core/dist.o,$(LIB_OBJ)) $(GPU_DIR)/dist_nompi.o
# No search path into this machine's CUDA or cuDNN folders: the stage's
# libcudart comes from its lib/, and cuDNN from the folder run.sh chose on
# the GPU machine (LD_LIBRARY_PATH), which a DT_RPATH entry would override.
GPU_CUDA_LINK = -L$(CUDA_HOME)/lib64 -Wl,-rpath-link,$(CUDA_HOME)/lib64 \
                -L$(CUDNN_LIBDIR) -Wl,-rpath-link,$(CUDNN_LIBDIR) \
                $(if $(filter %/libcudnn.so,$(CUDNN_LIBFILE)),-lcudnn,-l:libcudnn.so.9) -lcudart -lstdc++
GPU_CUDA_LIBS = $(if $(HAVE_CUDA),$(GPU_CUDA_LINK))
GPU_LDLIBS   = $(PKG_LIBS) $(GPU_CUDA_LIBS) -lpthread -lm
# DT_RPATH (not RUNPATH): searched for the libraries' own dependencies too,
# so the staged folder (bin/, lib/) finds its libraries wherever it is
# copied, also when python3 dlopens lib/librepro.so.
GPU_RPATH_BIN = -Wl,--disable-new-dtags,-rpath,'$$ORIGIN/../lib'
GPU_RPATH_LIB = -Wl,--disable-new-dtags,-rpath,'$$ORIGIN'
GPU_BINS     = $(GPU_DIR)/repro $(GPU_DIR)/librepro.so $(GPU_DIR)/check_cuda_ops $(GPU_DIR)/step_time
.PHONY: gpu-bins gpu-probe gpu-no-cuda
gpu-bins: $(if $(HAVE_CUDA),$(GPU_BINS),gpu-no-cuda)
gpu-no-cuda:
	@echo "✗ no CUDA build here (nvcc: '$(NVCC)', cudnn.h: '$(CUDNN_H)', libcudnn: '$(CUDNN_LIBFILE)'$(if $(SAN),; sanitizer build))"; exit 3
# What the CUDA/cuDNN probe found (tests/gpu/selftest.sh reads it).
gpu-probe:
	@echo "nvcc=$(NVCC)"; echo "cudnn_h=$(CUDNN_H)"; echo "cudnn_lib=$(CUDNN_LIBFILE)"; \
	 echo "cuda_link=$(strip $(CUDA_LIBS))"; echo "have_cuda=$(HAVE_CUDA)"

$(GPU_DIR)/dist_nompi.o: harness/core/dist.c $(BUILD)/cflags.stamp | $(BUILD)/build_info.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DEPFLAGS) -c $< -o $@
$(GPU_DIR)/librepro.a: $(GPU_LIB_OBJ) | lib-names
	@rm -f $@
	ar rcs $@ $(GPU_LIB_OBJ)
$(GPU_DIR)/librepro.so: $(GPU_LIB_OBJ)
	$(CC) $(LDFLAGS) -shared -Wl,-soname,librepro.so.$(REPRO_SOVERSION) -Wl,--no-undefined \
	    $(GPU_RPATH_LIB) -o $@ $^ $(GPU_LDLIBS)
$(GPU_DIR)/repro: $(CLI_OBJ) $(GPU_DIR)/librepro.a
	$(CC) $(LDFLAGS) $(GPU_RPATH_BIN) -o $@ $^ $(GPU_LDLIBS)
$(GPU_DIR)/check_cuda_ops $(GPU_DIR)/step_time: $(GPU_DIR)/%: $(BUILD)/tests/gpu/%.o $(GPU_DIR)/librepro.a
	$(CC) $(LDFLAGS) $(GPU_RPATH_BIN) -o $@ $^ $(GPU_LDLIBS)

# check_cuda_ops against tests/gpu/fake_device.c, the CPU backend posing as
# the device (no CUDA needed): tests/gpu/selftest.sh plants one fault at a
# time in it to prove that each GPU check can fail, naming the fault.
GPU_FAKE_SRC = tests/gpu/check_cuda_ops.c tests/gpu/fake_device.c
.PHONY: gpu-fake
gpu-fake: $(GPU_DIR)/check_cuda_ops_fake
$(GPU_DIR)/check_cuda_ops_fake: $(GPU_FAKE_SRC) tests/gpu/ops_compare.h tests/gpu/fake_device.h \
    kernels/cuda/cudnn_admit.h $(BUILD)/librepro.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -DREPRO_GPU_FAKE_DEVICE $(LDFLAGS) -o $@ $(GPU_FAKE_SRC) $(BUILD)/librepro.a $(LDLIBS)

$(BUILD)/bench_%: $(BUILD)/bench/%.o $(BUILD)/librepro.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# Keep bench objects instead of deleting them as intermediates. (A bare
# .SECONDARY: would also stop the FORCE rules from running.)
.SECONDARY: $(BENCH_SRC:%.c=$(BUILD)/%.o) $(FUZZ_TARGETS:%=$(BUILD)/tests/fuzz/fuzz_%.o)
.PHONY: FORCE

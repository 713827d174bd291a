# normcmp - build, test, demo and benchmark (see README.md and `make help`).
#
# One non-recursive Makefile. The library (everything in src/ except main.c
# and cli/) builds into $(BUILD)/libnormcmp.a; the binary, the unit tests,
# the fuzz replayers and the benchmark link it. Missing Debian packages are
# installed by scripts/deps.sh the first time a build needs them.

PKGS     := libpng libcjson cairo
CC       ?= cc
CFLAGS   ?= -O2 -g
LDFLAGS  ?=
PREFIX   ?= /usr/local
MANDIR   ?= $(PREFIX)/share/man
DATADIR  ?= $(PREFIX)/share/normcmp
DESTDIR  ?=
# the Python package (import normcmp): where the python3 that has PyTorch
# (Debian's /usr/bin/python3) looks under PREFIX
PYTHON3  ?= /usr/bin/python3
PYTHONDIR ?= $(PREFIX)/lib/python$(shell $(PYTHON3) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || echo 3)/dist-packages

# Parallel by default (one job per core) unless -j was given; one short
# line per step (CC file, AR, LD) unless V=1, which shows the commands.
ifeq ($(filter -j%,$(MAKEFLAGS)),)
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 2)
endif
ifeq ($(V),1)
Q   :=
say  = @:
else
Q   := @
say  = @printf '%-3s %s\n' '$(1)' '$(2)'
endif

WARN     := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
            -Wpointer-arith -Wformat=2 -Wvla
ifeq ($(WERROR),1)
WARN     += -Werror
endif
# -fno-math-errno: nothing here reads errno after a math call, and without
# it GCC keeps a scalar call to sqrt (which may set errno) in every loop,
# which stops vectorisation; results are the same bits either way.
XCFLAGS  := -std=c11 -D_GNU_SOURCE -pthread -fno-math-errno $(WARN) -Isrc
XLDFLAGS := -pthread
# GCC's -O2 vectorizes only loops that need no checks; the streaming passes
# want its dynamic cost model. (clang vectorizes at -O2 by default.)
ifeq ($(shell $(CC) -dM -E - </dev/null 2>/dev/null | grep -c __clang__),0)
XCFLAGS  += -fvect-cost-model=dynamic
endif
ifeq ($(NATIVE),1)
XCFLAGS  += -march=native
endif

ifeq ($(SANITIZE),1)
BUILD    := build/san
XCFLAGS  += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
XLDFLAGS += -fsanitize=address,undefined
else
BUILD    := build
endif

NOCONFIG_GOALS := clean help format deps uninstall
ifneq ($(filter-out $(NOCONFIG_GOALS),$(or $(MAKECMDGOALS),all)),)
include $(BUILD)/config.mk
endif

# OpenBLAS, for the benchmark only (normcmp-bench reports its sgemm/dgemm
# rate; nothing in normcmp calls BLAS, so the binary does not load it):
# Debian's serial build (libopenblas-serial-dev). The default pthread build
# starts a thread pool when it is loaded and hangs at exit when memory runs
# out. The serial build has the same soname as the others; an rpath makes
# the loader pick it over the alternatives link. Its flags are read when
# the benchmark is built, after scripts/deps.sh bench (bench-deps) has
# installed it.
MULTIARCH   := $(shell $(CC) -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)
BLAS_SERIAL := /usr/lib/$(MULTIARCH)/openblas-serial
BLAS_CFLAGS  = $(shell PKG_CONFIG_PATH=$(BLAS_SERIAL)/pkgconfig pkg-config --cflags openblas)
BLAS_LIBS    = $(shell PKG_CONFIG_PATH=$(BLAS_SERIAL)/pkgconfig pkg-config --libs openblas) \
               -Wl,-rpath,$(BLAS_SERIAL)

# pkg-config flags, computed once per build folder; installs what is missing.
$(BUILD)/config.mk: scripts/deps.sh
	@mkdir -p $(BUILD)
	@pkg-config --exists $(PKGS) 2>/dev/null || scripts/deps.sh build
	@pkg-config --exists $(PKGS) || { echo "normcmp: pkg-config cannot find $(PKGS); run scripts/deps.sh build" >&2; exit 1; }
	@{ echo "PKG_CFLAGS := $$(pkg-config --cflags $(PKGS))"; \
	   echo "PKG_LIBS := $$(pkg-config --libs $(PKGS)) -lm"; } > $@.tmp && mv $@.tmp $@

# every folder of src/ but cli/ (the layers: README "Layout")
LIB_SRC  := $(filter-out src/cli/%,$(wildcard src/*/*.c))
CLI_SRC  := src/main.c $(wildcard src/cli/*.c)
UNIT_SRC := $(wildcard tests/unit/test_*.c)
FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)

LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/%.o)
CLI_OBJ  := $(CLI_SRC:%.c=$(BUILD)/%.o)
LIB      := $(BUILD)/libnormcmp.a
BIN      := $(BUILD)/normcmp
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
FUZZ_BIN := $(FUZZ_SRC:tests/fuzz/%.c=$(BUILD)/tests/replay_%)
BENCH    := $(BUILD)/normcmp-bench

ALL_CFLAGS  = $(XCFLAGS) $(PKG_CFLAGS) $(CFLAGS)
ALL_LDFLAGS = $(XLDFLAGS) $(LDFLAGS)

# The test and fuzz objects are intermediate files of pattern rules: keep
# them, so a second `make test` with nothing changed rebuilds nothing.
.SECONDARY:

.PHONY: all test check demo demo-model bench bench-deps fuzz figures format deps install uninstall clean help
.DEFAULT_GOAL := all

all: $(BIN)

$(BUILD)/%.o: %.c $(BUILD)/config.mk
	@mkdir -p $(@D)
	$(call say,CC,$<)
	$(Q)$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

$(LIB): $(LIB_OBJ)
	@rm -f $@
	$(call say,AR,$@)
	$(Q)$(AR) rcs $@ $^

$(BIN): $(CLI_OBJ) $(LIB)
	$(call say,LD,$@)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $(CLI_OBJ) $(LIB) $(PKG_LIBS)

$(BUILD)/tests/%: $(BUILD)/tests/unit/%.o $(LIB)
	$(call say,LD,$@)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $< $(LIB) $(PKG_LIBS)

$(BUILD)/tests/replay_%: $(BUILD)/tests/fuzz/%.o $(BUILD)/tests/fuzz/replay.o $(LIB)
	$(call say,LD,$@)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $< $(BUILD)/tests/fuzz/replay.o $(LIB) $(PKG_LIBS)

$(BUILD)/tests/bench/bench.o: XCFLAGS += $(BLAS_CFLAGS)
$(BUILD)/tests/bench/bench.o: | bench-deps
bench-deps:
	@scripts/deps.sh bench
$(BENCH): $(BUILD)/tests/bench/bench.o $(LIB)
	$(call say,LD,$@)
	$(Q)$(CC) $(ALL_LDFLAGS) -o $@ $< $(LIB) $(PKG_LIBS) $(BLAS_LIBS)

# The whole suite: unit tests, command-line tests, NumPy cross-checks and
# the fuzz corpus replayed through the plain build. Ends with one summary.
# Installs every optional dependency first, and then a check that would be
# skipped for a missing one fails instead (NC_TEST_REQUIRE_ALL=1).
test: $(BIN) $(UNIT_BIN) $(FUZZ_BIN)
	@scripts/deps.sh test
	@BUILD=$(BUILD) NC_TEST_REQUIRE_ALL=1 tests/run.sh

# The build proved by the C unit tests, the command-line tests and the fuzz
# corpus, with the build dependencies and python3 alone: no root, no
# network, nothing installed (deps.sh check only says what is missing); a
# check that needs an optional package that is not installed (NumPy,
# Pillow, chromium, GNU parallel, groff) is skipped and named.
check: $(BIN) $(UNIT_BIN) $(FUZZ_BIN)
	@NC_DEPS_INSTALL=0 scripts/deps.sh check
	@BUILD=$(BUILD) tests/run.sh --kinds unit,cli,fuzz

demo: $(BIN)
	$(BIN) run configs/demo.json

demo-model: $(BIN)
	@scripts/deps.sh model
	@BUILD=$(BUILD) scripts/demo_model.sh

bench: $(BIN) $(BENCH)
	@BUILD=$(BUILD) CFLAGS_USED="$(ALL_CFLAGS)" scripts/bench.sh

figures: $(BIN)
	scripts/make_figures.sh

fuzz:
	@scripts/deps.sh fuzz
	scripts/fuzz.sh $(FUZZ_SECONDS)

format:
	clang-format -i $(wildcard src/*.c src/*/*.c src/*/*.h tests/*/*.c tests/*/*.h)

deps:
	scripts/deps.sh test

# The binary, the man page, the dump script and the swap test as
# normcmp-dump and normcmp-swap, the Python package (normcmp: the scripts'
# code and the notebook module) in PYTHONDIR, the example model loaders and
# the shipped checkpoints in DATADIR. The installed scripts and package find
# each other, the binary and DATADIR through paths relative to themselves
# (recorded here), so a DESTDIR install works where it is staged.
relpath = $(shell realpath -m --relative-to='$(1)' '$(2)')
install: $(BIN)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(DATADIR)/models \
	           $(DESTDIR)$(PYTHONDIR)/normcmp
	install -m 755 $(BIN) $(DESTDIR)$(PREFIX)/bin/normcmp
	for s in dump:dump_activations swap:swap_test; do \
	    t=$(DESTDIR)$(PREFIX)/bin/normcmp-$${s%%:*}; \
	    sed 's|^INSTALLED_PYTHON = None$$|INSTALLED_PYTHON = "$(call relpath,$(PREFIX)/bin,$(PYTHONDIR))"|' \
	        scripts/$${s#*:}.py >$$t.tmp && grep -q '^INSTALLED_PYTHON = "' $$t.tmp && \
	        chmod 755 $$t.tmp && mv $$t.tmp $$t || { rm -f $$t.tmp; exit 1; }; \
	done
	install -m 644 docs/normcmp.1 $(DESTDIR)$(MANDIR)/man1/normcmp.1
	install -m 644 scripts/example_model.py scripts/llama2c_model.py $(DESTDIR)$(DATADIR)
	install -m 644 data/models/README.md data/models/stories260K.bin data/models/vit4mnist.ptl \
	        $(DESTDIR)$(DATADIR)/models
	install -m 644 scripts/normcmp/*.py $(DESTDIR)$(PYTHONDIR)/normcmp
	printf '"""Written by make install: the installed folders, relative to this one."""\nBINDIR = "%s"\nDATADIR = "%s"\n' \
	    '$(call relpath,$(PYTHONDIR)/normcmp,$(PREFIX)/bin)' '$(call relpath,$(PYTHONDIR)/normcmp,$(DATADIR))' \
	    >$(DESTDIR)$(PYTHONDIR)/normcmp/_installed.py

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/normcmp $(DESTDIR)$(PREFIX)/bin/normcmp-dump \
	      $(DESTDIR)$(PREFIX)/bin/normcmp-swap $(DESTDIR)$(MANDIR)/man1/normcmp.1 \
	      $(DESTDIR)$(DATADIR)/example_model.py $(DESTDIR)$(DATADIR)/llama2c_model.py \
	      $(DESTDIR)$(DATADIR)/models/README.md $(DESTDIR)$(DATADIR)/models/stories260K.bin \
	      $(DESTDIR)$(DATADIR)/models/vit4mnist.ptl
	rm -rf $(DESTDIR)$(PYTHONDIR)/normcmp $(DESTDIR)$(DATADIR)/__pycache__
	-rmdir $(DESTDIR)$(DATADIR)/models $(DESTDIR)$(DATADIR) 2>/dev/null

clean:
	rm -rf build

help:
	@echo "make            build $(BIN)"
	@echo "make demo       run configs/demo.json into out/demo/"
	@echo "make demo-model the whole loop on the shipped ViT: dump, analyse, swap test (out/demo-model/)"
	@echo "make test       the whole test suite, after installing what it needs (SANITIZE=1: with ASan and UBSan)"
	@echo "make check      unit, command-line and fuzz-corpus tests with the build dependencies alone (no root)"
	@echo "make bench      time each stage on a 4096 x 4096 layer, the fixed cost of a run, a 7B-shaped model, NumPy ratios (NATIVE=1: -march=native)"
	@echo "make figures    regenerate every paper-style figure into out/figures/"
	@echo "make fuzz       run each libFuzzer target (FUZZ_SECONDS=60 each)"
	@echo "make deps       install the Debian packages (root or sudo)"
	@echo "make install    install normcmp, normcmp-dump, normcmp-swap, the man page, the Python package"
	@echo "                (import normcmp) and the shipped models (PREFIX=$(PREFIX), DESTDIR, PYTHONDIR)"
	@echo "make uninstall  remove what make install installed"
	@echo "make format     clang-format the sources"

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(UNIT_SRC:%.c=$(BUILD)/%.d) \
         $(FUZZ_SRC:%.c=$(BUILD)/%.d) $(BUILD)/tests/fuzz/replay.d $(BUILD)/tests/bench/bench.d

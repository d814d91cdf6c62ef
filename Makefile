# tokscope — terminal chat for local LLaMA-family GGUF models.
#
#   make            build ./tokscope (-O2 -march=native; NATIVE=0 for portable code)
#   make run        install missing Debian packages, build, start the TUI on MODEL
#   make test       install missing Debian packages, build, run every test suite
#   make bench      tokens/s benchmark (see tests/bench.sh)
#   make lint       cppcheck + clang-tidy over our sources
#   make fuzz       libFuzzer targets (clang), FUZZ_TIME seconds each
#   make test-asan  the test suites under AddressSanitizer + UBSan (BUILD=build-asan)
#   make install    PREFIX=/usr/local DESTDIR=... (make uninstall removes it again)
#
# BUILD=dir puts objects elsewhere (parallel builds in one tree do not collide).
# Every core builds unless -jN says otherwise (a fresh checkout's make test,
# CI's, builds three trees: native, AVX2 variant, sanitizer).

ifeq ($(MAKELEVEL),0)
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 1)
endif

NATIVE  ?= 1
BUILD   ?= build
BIN     ?= tokscope
CC      ?= cc
OPT     ?= -O2 -g
MODEL   ?= $(firstword $(wildcard ../shared/models/stories260K.gguf))

ifeq ($(NATIVE),1)
ARCHFLAGS := -march=native
else
ARCHFLAGS :=
endif

NCURSES_CFLAGS := $(shell pkg-config --cflags ncursesw 2>/dev/null)
NCURSES_LIBS   := $(shell pkg-config --libs ncursesw 2>/dev/null || echo -lncursesw -ltinfo)

CFLAGS   += $(OPT) $(ARCHFLAGS) -std=gnu11 -Wall -Wextra -pthread -MMD -MP
CPPFLAGS += -Iengine -Iui -Iapp -D_GNU_SOURCE
LDLIBS   += $(NCURSES_LIBS) -lreadline -liniparser -lpcre2-8 -lcjson -lcurl -lcrypto -lmicrohttpd -lopenblas -lm -lpthread

# Debian packages the build, the tests and `make run` need.
DEB_PKGS := gcc make pkg-config libncursesw5-dev libreadline-dev libopenblas-dev \
            libiniparser-dev libcmocka-dev libpcre2-dev libcjson-dev libcurl4-openssl-dev libssl-dev \
            libmicrohttpd-dev tmux python3 python3-jinja2

ENGINE_SRC := $(sort $(wildcard engine/*.c engine/*/*.c))
UI_SRC     := $(sort $(wildcard ui/*.c))
APP_SRC    := $(sort $(filter-out app/main.c,$(wildcard app/*.c)))
LIB_SRC    := $(ENGINE_SRC) $(UI_SRC) $(APP_SRC)
LIB_OBJ    := $(LIB_SRC:%.c=$(BUILD)/%.o)
UNIT_SRC   := $(sort $(wildcard tests/unit/test_*.c))
UNIT_BIN   := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
TOOL_SRC   := $(sort $(wildcard tests/tools/*.c))
TOOL_BIN   := $(TOOL_SRC:tests/tools/%.c=$(BUILD)/tools/%)
FUZZ_ALL   := gguf tokenizer jinja store ini serve sse
REPLAY_BIN := $(FUZZ_ALL:%=$(BUILD)/replay/fuzz_%)
SYSCONF_TEST_BIN := $(BUILD)/tests/tokscope-sysconf

.PHONY: all deps deps-check run test test-only test-bins asan-bins bench lint format clean fuzz fuzz-deps fuzz-build test-asan install uninstall FORCE

all: $(BIN)

$(BUILD)/libtokscope.a: $(LIB_OBJ)
	@rm -f $@
	$(AR) rcs $@ $^

$(BIN): $(BUILD)/app/main.o $(BUILD)/libtokscope.a
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/ui/%.o: ui/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(NCURSES_CFLAGS) $(CFLAGS) -c -o $@ $<

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

# the C library's tanhf step by step: no fused multiply-adds (glibc's
# x86-64 build has none), whatever the target allows
$(BUILD)/engine/kernels/tanhf_libm.o: CFLAGS += -ffp-contract=off

$(BUILD)/tests/%: tests/unit/%.c tests/unit/testutil.h $(BUILD)/libtokscope.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Itests/unit $(CFLAGS) -o $@ $< $(BUILD)/libtokscope.a -lcmocka $(LDLIBS)

$(BUILD)/tools/%: tests/tools/%.c $(BUILD)/libtokscope.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(BUILD)/libtokscope.a $(LDLIBS)

# Installs only what is missing; silent and instant when everything is there.
deps:
	@missing=""; for p in $(DEB_PKGS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'install ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi

# Plain `make` on a machine without the packages stops with one line saying
# which are missing, instead of a compiler error deep in the build. Checked
# for `make`, `make all` and `make deps-check` from the command line only;
# skipped where there is no dpkg (the packages may come from elsewhere).
ifeq ($(MAKELEVEL),0)
ifneq ($(filter all deps-check,$(or $(MAKECMDGOALS),all)),)
ifneq ($(shell command -v dpkg-query),)
DEPS_MISSING := $(strip $(foreach p,$(DEB_PKGS),$(if $(shell dpkg-query -W -f='$${Status}' $(p) 2>/dev/null | \
                  grep -q 'install ok installed' && echo y),,$(p))))
ifneq ($(DEPS_MISSING),)
$(error missing Debian packages: $(DEPS_MISSING); run 'make deps' (make run and make test install them too))
endif
endif
endif
endif
deps-check:
	@:

run: deps
	@$(MAKE) --no-print-directory all
	./$(BIN) $(if $(MODEL),-m $(MODEL))

test: deps
	@$(MAKE) --no-print-directory test-only

# Variant builds beside the native one, where this CPU can run them, each
# with kernels of its own that the tests hold to the same bits: AVX2 for
# machines without AVX-512 (Zen 2/3, older Intel), and AVX-512 without VNNI
# (Skylake-SP/X: AVX-512 attention, repacked and packed kernels beside the
# GEMMs' 256-bit tiles, a mix neither other build runs). Each builds
# tokscope (which the bit-exact goldens run, tests/lib.sh) and VARIANT_UNITS
# as $(BUILD)/tests/UNIT_NAME.
# (test_attn_group: the grouped generation kernel has an AVX2 form; the
# quantized-cache one is AVX-512 only and skips there)
VARIANT_UNITS := test_quant test_packed test_blas test_gemm_iq test_mxfp4 test_iq4 test_attn test_attn_sinks test_gemm_kq5 \
                 test_gemm_kq6 test_moe_kernels test_recurrent test_iq1 test_iq2 test_matvec_iq test_attn_group
has_flags = $(shell for f in $(1); do grep -qw $$f /proc/cpuinfo 2>/dev/null || exit 0; done; echo y)
AVX2_VARIANT := $(if $(filter 1,$(NATIVE)),$(call has_flags,avx2))
SKX_VARIANT  := $(if $(filter 1,$(NATIVE)),$(call has_flags,avx512f avx512cd avx512bw avx512dq avx512vl))
VARIANT_BIN  := $(if $(AVX2_VARIANT),$(BUILD)/avx2/tokscope $(VARIANT_UNITS:%=$(BUILD)/tests/%_avx2)) \
                $(if $(SKX_VARIANT),$(BUILD)/skx/tokscope $(VARIANT_UNITS:%=$(BUILD)/tests/%_skx))

# VARIANT_RULES NAME MARCH: the build $(BUILD)/NAME with -march=MARCH.
# Its units after its binary: two sub-makes at once in one tree (make -j2)
# would write the same objects and library; one sub-make builds them all.
define VARIANT_RULES
$$(BUILD)/$(1)/tokscope: FORCE
	@$$(MAKE) --no-print-directory BUILD=$$(BUILD)/$(1) ARCHFLAGS=-march=$(2) BIN=$$@ $$@

$$(BUILD)/tests/test_quant_$(1): $$(BUILD)/$(1)/tokscope FORCE
	@$$(MAKE) --no-print-directory BUILD=$$(BUILD)/$(1) ARCHFLAGS=-march=$(2) \
	  $$(VARIANT_UNITS:%=$$(BUILD)/$(1)/tests/%)
	@mkdir -p $$(dir $$@) && for t in $$(VARIANT_UNITS); do \
	  cp $$(BUILD)/$(1)/tests/$$$$t $$(BUILD)/tests/$$$${t}_$(1) || exit 1; done

$$(filter-out $$(BUILD)/tests/test_quant_$(1),$$(VARIANT_UNITS:%=$$(BUILD)/tests/%_$(1))): $$(BUILD)/tests/test_quant_$(1)
	@:
endef
$(eval $(call VARIANT_RULES,avx2,haswell))
$(eval $(call VARIANT_RULES,skx,skylake-avx512))

FORCE:

test-bins: $(BIN) $(UNIT_BIN) $(TOOL_BIN) $(REPLAY_BIN) $(SYSCONF_TEST_BIN) $(VARIANT_BIN)

# Three suites at a time (tests/run.sh, JOBS): one compute-bound (unit,
# golden), two end-to-end (mostly waiting on tmux and servers, a quarter to a
# third of a core each), so two cores stay busy: with one end-to-end lane a
# core idled through most of its suites (make test's wall time was 27.5 min
# in CI on 2 cores).
TEST_JOBS ?= 3

test-only: test-bins asan-bins
	@BUILD=$(BUILD) BIN=$(BIN) ASAN_BUILD=$(ASAN_BUILD) ASAN_PART="$(ASAN_PART)" JOBS=$(TEST_JOBS) sh tests/run.sh

# ---- sanitizers --------------------------------------------------------------
# make test-asan: every suite (unit, golden, fuzz replay, end-to-end) on a
# build with AddressSanitizer (LeakSanitizer included) and UBSan, in
# $(ASAN_BUILD). Any report fails the run: the sanitizers log to files
# (tests/run.sh counts them), so reports from the TUI under tmux count too.
# make test runs the ASAN_PART suites of it too, as "asan/..." (all of it
# takes too long for CI: see docs/bad-input.md).
ASAN_BUILD ?= $(BUILD)-asan
SAN_FLAGS  := -fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=all -fno-omit-frame-pointer
ASAN_PART  ?= unit/ golden/fuzz golden/info golden/generate golden/badinput golden/config golden/serve e2e/
ASAN_SUITES ?=

test-asan: deps
	@$(MAKE) --no-print-directory asan-bins
	@BUILD=$(ASAN_BUILD) BIN=$(ASAN_BUILD)/tokscope SANITIZE=1 SUITES="$(ASAN_SUITES)" sh tests/run.sh

asan-bins:
	@$(MAKE) --no-print-directory BUILD=$(ASAN_BUILD) BIN=$(ASAN_BUILD)/tokscope OPT="-O2 -g $(SAN_FLAGS)" \
	  AVX2_VARIANT= SKX_VARIANT= test-bins

bench: $(BIN) $(BUILD)/tools/gguf_random $(BUILD)/tools/membw $(BUILD)/tools/imatrix_random
	@BUILD=$(BUILD) BIN=$(BIN) sh tests/bench.sh

# ---- install -----------------------------------------------------------------
# make install PREFIX=/usr/local DESTDIR=...: the binary, the man page
# (gzip), the example config in the doc directory and, when there is none,
# in SYSCONFDIR/tokscope (/etc for PREFIX=/usr, PREFIX/etc otherwise; the
# binary reads it from there). make uninstall removes what it installed
# (conf/install.sh keeps the list).
PREFIX     ?= /usr/local
DESTDIR    ?=
SYSCONFDIR ?= $(if $(filter /usr,$(PREFIX)),/etc,$(PREFIX)/etc)
BINDIR     ?= $(PREFIX)/bin
MANDIR     ?= $(PREFIX)/share/man
DOCDIR     ?= $(PREFIX)/share/doc/tokscope

# config.o knows SYSCONFDIR: rebuilt when it changes
$(BUILD)/sysconfdir.txt: FORCE
	@mkdir -p $(dir $@)
	@echo '$(SYSCONFDIR)' | cmp -s - $@ || echo '$(SYSCONFDIR)' >$@
$(BUILD)/app/config.o $(BUILD)/tests/test_ui_config: $(BUILD)/sysconfdir.txt
$(BUILD)/app/config.o $(BUILD)/tests/test_ui_config: CPPFLAGS += -DTOKSCOPE_SYSCONFDIR='"$(SYSCONFDIR)"'

# tokscope reading its system config from $(BUILD)/test-etc (tests/golden/config.sh)
$(SYSCONF_TEST_BIN): app/config.c $(BUILD)/app/main.o $(BUILD)/libtokscope.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -DTOKSCOPE_SYSCONFDIR='"$(abspath $(BUILD))/test-etc"' $(CFLAGS) -o $@ app/config.c \
	  $(BUILD)/app/main.o $(BUILD)/libtokscope.a $(LDLIBS)

install: all
	@sh conf/install.sh install "$(DESTDIR)" "$(BINDIR)" "$(MANDIR)" "$(DOCDIR)" "$(SYSCONFDIR)" $(BIN)

uninstall:
	@sh conf/install.sh uninstall "$(DESTDIR)" "$(BINDIR)" "$(MANDIR)" "$(DOCDIR)" "$(SYSCONFDIR)"

# ---- fuzzing -----------------------------------------------------------------
# libFuzzer targets (tests/fuzz/fuzz_*.c) over the library built again by
# clang with ASan + UBSan in $(BUILD)/fuzz. `make fuzz` runs each for
# FUZZ_TIME seconds (FUZZ_TARGETS picks some, FUZZ_JOBS runs that many at
# once, under nice); the working corpora stay in $(BUILD)/fuzz/corpus, crash
# inputs land in $(BUILD)/fuzz/crashes. make test replays the seeds and
# regression inputs (tests/fuzz/corpus, tests/fuzz/regress) through the same
# targets built with $(CC), and make test-asan under the sanitizers.
FUZZ_PKGS    := clang libclang-rt-dev
FUZZ_TARGETS ?= gguf tokenizer jinja store ini serve sse
FUZZ_TIME    ?= 60
FUZZ_JOBS    ?= 1
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_BIN     := $(FUZZ_ALL:%=$(BUILD)/fuzz/fuzz_%)

fuzz-deps:
	@$(MAKE) --no-print-directory deps DEB_PKGS="$(FUZZ_PKGS)"

fuzz: deps fuzz-deps
	@$(MAKE) --no-print-directory fuzz-build $(BUILD)/tools/gguf_corpus $(BUILD)/tools/gguf_random
	@BUILD=$(BUILD) FUZZ_TIME=$(FUZZ_TIME) FUZZ_JOBS=$(FUZZ_JOBS) sh tests/fuzz/run.sh $(FUZZ_TARGETS)

fuzz-build:
	@$(MAKE) --no-print-directory BUILD=$(BUILD)/fuzz CC=clang \
	  OPT="-O1 -g $(FUZZ_SAN) -fsanitize=fuzzer-no-link" $(BUILD)/fuzz/libtokscope.a
	@$(MAKE) --no-print-directory $(FUZZ_BIN)

$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h $(BUILD)/fuzz/libtokscope.a
	clang $(CPPFLAGS) $(NCURSES_CFLAGS) -Iui -Itests/fuzz -O1 -g $(ARCHFLAGS) -std=gnu11 -pthread $(FUZZ_SAN) \
	  -fsanitize=fuzzer -o $@ $< $(BUILD)/fuzz/libtokscope.a $(LDLIBS)

$(BUILD)/replay/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/replay.c tests/fuzz/fuzz.h $(BUILD)/libtokscope.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(NCURSES_CFLAGS) -Itests/fuzz $(CFLAGS) -o $@ $< tests/fuzz/replay.c \
	  $(BUILD)/libtokscope.a $(LDLIBS)

lint:
	cppcheck --quiet --error-exitcode=1 --enable=warning,performance,portability \
	  --inline-suppr --suppress=missingIncludeSystem -Iengine -Iui -Iapp \
	  engine ui app
	clang-tidy --quiet $(LIB_SRC) app/main.c -- $(CPPFLAGS) $(NCURSES_CFLAGS) -std=gnu11 $(ARCHFLAGS)

format:
	clang-format -i engine/*.[ch] engine/*/*.[ch] ui/*.[ch] app/*.[ch] tests/unit/*.[ch]

clean:
	rm -rf $(BUILD) $(BIN)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)

# SPDX-License-Identifier: Apache-2.0
# tests/fuzz/fuzz.mk — libFuzzer harnesses (included from the top Makefile).
#
# Every tests/fuzz/fuzz_<name>.c is one harness: one translation unit with
# LLVMFuzzerTestOneInput, linked against a clang-built archive of src/*.c
# (main.c aside) and the generated protobuf-c code, all under ASan, UBSan
# and libFuzzer's coverage.  Its corpus is tests/fuzz/corpus/<name>/ (seeds
# named seed-*, crash regressions named crash-*, the rest minimized by
# `make fuzz`).  Nothing here needs a broker.
#
#   make fuzz          FUZZ_TIME seconds per target (default 60), then the
#                      new inputs are merged into the tree's corpus,
#                      minimized (seed-* and crash-* are always kept).
#                      FUZZ_TARGETS="duration rate" picks targets.
#   make fuzz-smoke    builds every harness, replays each committed corpus
#                      and fuzzes each target FUZZ_SMOKE_TIME seconds
#                      (default 5); one line per target; fails on a crash.
#   make fuzz-build    just the harnesses (build-fuzz/fuzz_<name>).
#   make fuzz-seeds    regenerates the changelog harnesses' seed-* inputs
#                      (valid protobuf records, gen_changelog_seeds.c).
#
# Crashes found by `make fuzz` land in build-fuzz/crashes/<name>/; once
# fixed, copy the input to tests/fuzz/corpus/<name>/crash-<what>.

FUZZ_CC          ?= clang
FUZZ_BUILD       ?= build-fuzz
FUZZ_TIME        ?= 60
FUZZ_SMOKE_TIME  ?= 5
FUZZ_SANITIZE    := -fsanitize=address,undefined -fno-sanitize-recover=undefined \
                    -fno-omit-frame-pointer
FUZZ_CFLAGS      := -O1 -g -std=gnu11 -Wall -Wextra -Werror \
                    -Wno-missing-field-initializers -D_GNU_SOURCE -Isrc \
                    -I$(FUZZ_BUILD)/gen $(shell pkg-config --cflags $(PKGS) 2>/dev/null) \
                    $(ICU_CFLAGS) $(FUZZ_SANITIZE)
FUZZ_LDLIBS      := $(shell pkg-config --libs $(PKGS) 2>/dev/null) $(ICU_LIBS) -lm -lpthread
# libFuzzer flags of every run: inputs up to 64 KiB; an input that takes over
# 10 s, or 2 GiB, is a finding, and so is a leak (ASan's default).
FUZZ_RUN_FLAGS   ?= -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
                    -print_final_stats=1

FUZZ_SRCS        := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_ALL         := $(patsubst tests/fuzz/fuzz_%.c,%,$(FUZZ_SRCS))
FUZZ_TARGETS     ?= $(FUZZ_ALL)
FUZZ_BINS        := $(patsubst %,$(FUZZ_BUILD)/fuzz_%,$(FUZZ_ALL))
FUZZ_GEN_C       := $(patsubst proto/%.proto,$(FUZZ_BUILD)/gen/%.pb-c.c,$(PROTOS))
FUZZ_LIB_OBJS    := $(patsubst src/%.c,$(FUZZ_BUILD)/obj/%.o,$(filter-out src/main.c,$(SRCS))) \
                    $(patsubst $(FUZZ_BUILD)/gen/%.c,$(FUZZ_BUILD)/obj/%.o,$(FUZZ_GEN_C))

.PHONY: fuzz fuzz-smoke fuzz-build fuzz-seeds fuzz-clean
.SECONDARY: $(FUZZ_GEN_C) $(FUZZ_GEN_C:.c=.h)

$(FUZZ_BUILD)/gen/%.pb-c.c $(FUZZ_BUILD)/gen/%.pb-c.h: proto/%.proto
	@mkdir -p $(FUZZ_BUILD)/gen
	protoc-c --proto_path=proto --c_out=$(FUZZ_BUILD)/gen $<

$(FUZZ_BUILD)/obj/%.pb-c.o: $(FUZZ_BUILD)/gen/%.pb-c.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c -o $@ $<

$(FUZZ_BUILD)/obj/%.o: src/%.c $(FUZZ_GEN_C:.c=.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c -o $@ $<

$(FUZZ_BUILD)/libsluice-fuzz.a: $(FUZZ_LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

# A harness may #include helpers of its own (tests/fuzz/*.inc).
$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_BUILD)/libsluice-fuzz.a $(wildcard tests/fuzz/*.inc)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -Itests/fuzz -fsanitize=fuzzer -MMD -MP \
	    -o $@ $< $(FUZZ_BUILD)/libsluice-fuzz.a $(FUZZ_LDLIBS)


fuzz-build: $(FUZZ_BINS) ## build the fuzz harnesses only (build-fuzz/)

# Valid changelog records of each operator, packed with the generated
# protobuf-c code, so the changelog harnesses start from meaningful state.
$(FUZZ_BUILD)/gen_changelog_seeds: tests/fuzz/gen_changelog_seeds.c $(FUZZ_BUILD)/obj/sluice.pb-c.o
	$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $< $(FUZZ_BUILD)/obj/sluice.pb-c.o $(FUZZ_LDLIBS)

fuzz-seeds: $(FUZZ_BUILD)/gen_changelog_seeds ## regenerate the changelog harnesses' seed-* inputs
	@mkdir -p tests/fuzz/corpus/changelog_delay tests/fuzz/corpus/changelog_debounce \
	    tests/fuzz/corpus/changelog_throttle
	$(FUZZ_BUILD)/gen_changelog_seeds tests/fuzz/corpus

# The dictionary of a target, if it has one: tests/fuzz/<name>.dict, else
# the one of its family (changelog.dict for changelog_delay).
fuzz_dict = $(addprefix -dict=,$(firstword $(wildcard tests/fuzz/$(1).dict \
	    tests/fuzz/$(firstword $(subst _, ,$(1))).dict)))

# `make fuzz`: one run per target (targets run in parallel under make -j),
# then a merge that keeps seed-* and crash-* and adds the fewest inputs that
# cover everything else, back into the tree.
FUZZ_RUN_RULES := $(patsubst %,fuzz-run-%,$(FUZZ_TARGETS))
.PHONY: $(FUZZ_RUN_RULES)
fuzz: $(FUZZ_RUN_RULES) ## libFuzzer on every parser, FUZZ_TIME s each (default 60)
	@$(call fuzz_verdict,fuzz,$(FUZZ_TARGETS))

# A failed target does not stop the others: each leaves a mark, and the
# verdict comes when all have run.
fuzz_verdict = failed=""; for t in $(2); do \
	    [ ! -e $(FUZZ_BUILD)/status/$$t.$(1).fail ] || failed="$$failed $$t"; \
	done; if [ -n "$$failed" ]; then echo "$(1): FAILED:$$failed"; exit 1; fi; \
	echo "$(1): all $(words $(2)) targets ok"

$(FUZZ_RUN_RULES): fuzz-run-%: $(FUZZ_BUILD)/fuzz_%
	@mkdir -p tests/fuzz/corpus/$* $(FUZZ_BUILD)/corpus/$* \
	    $(FUZZ_BUILD)/crashes/$* $(FUZZ_BUILD)/log $(FUZZ_BUILD)/status
	@rm -f $(FUZZ_BUILD)/status/$*.fuzz.fail
	@echo "fuzz $*: $(FUZZ_TIME) s (log: $(FUZZ_BUILD)/log/$*.log)"
	@rc=0; $(FUZZ_BUILD)/fuzz_$* $(FUZZ_RUN_FLAGS) $(call fuzz_dict,$*) \
	    -max_total_time=$(FUZZ_TIME) \
	    -artifact_prefix=$(FUZZ_BUILD)/crashes/$*/ \
	    $(FUZZ_BUILD)/corpus/$* tests/fuzz/corpus/$* \
	    >$(FUZZ_BUILD)/log/$*.log 2>&1 || rc=$$?; \
	tests/fuzz/merge.sh $(FUZZ_BUILD)/fuzz_$* tests/fuzz/corpus/$* \
	    $(FUZZ_BUILD)/corpus/$* $(FUZZ_BUILD)/merge/$* \
	    >>$(FUZZ_BUILD)/log/$*.log 2>&1 || rc=1; \
	tests/fuzz/summary.sh $* $(FUZZ_BUILD)/log/$*.log tests/fuzz/corpus/$* $$rc \
	    || touch $(FUZZ_BUILD)/status/$*.fuzz.fail

# `make fuzz-smoke`: replay the committed corpus (crash regressions
# included) and fuzz a few seconds, into a scratch corpus: the tree is
# left as it is.
FUZZ_SMOKE_RULES := $(patsubst %,fuzz-smoke-%,$(FUZZ_ALL))
.PHONY: $(FUZZ_SMOKE_RULES)
fuzz-smoke: $(FUZZ_SMOKE_RULES) ## replay the fuzz corpora, fuzz FUZZ_SMOKE_TIME s each (default 5)
	@$(call fuzz_verdict,fuzz-smoke,$(FUZZ_ALL))

$(FUZZ_SMOKE_RULES): fuzz-smoke-%: $(FUZZ_BUILD)/fuzz_%
	@rm -rf $(FUZZ_BUILD)/smoke/$*
	@mkdir -p tests/fuzz/corpus/$* $(FUZZ_BUILD)/smoke/$* \
	    $(FUZZ_BUILD)/smoke-crashes/$* $(FUZZ_BUILD)/log $(FUZZ_BUILD)/status
	@rm -f $(FUZZ_BUILD)/status/$*.fuzz-smoke.fail
	@rc=0; $(FUZZ_BUILD)/fuzz_$* $(FUZZ_RUN_FLAGS) $(call fuzz_dict,$*) \
	    -max_total_time=$(FUZZ_SMOKE_TIME) \
	    -artifact_prefix=$(FUZZ_BUILD)/smoke-crashes/$*/ \
	    $(FUZZ_BUILD)/smoke/$* tests/fuzz/corpus/$* \
	    >$(FUZZ_BUILD)/log/$*.smoke.log 2>&1 || rc=$$?; \
	tests/fuzz/summary.sh $* $(FUZZ_BUILD)/log/$*.smoke.log tests/fuzz/corpus/$* $$rc \
	    || touch $(FUZZ_BUILD)/status/$*.fuzz-smoke.fail

fuzz-clean: ## remove build-fuzz/
	rm -rf $(FUZZ_BUILD)

-include $(FUZZ_LIB_OBJS:.o=.d) $(FUZZ_BINS:=.d)

# sluice — GNU make, pkg-config.  `make help` lists the targets.

PKGS      := rdkafka libuv libprotobuf-c inih libmicrohttpd jansson gnutls
DEB_PKGS  := gcc make pkg-config librdkafka-dev libuv1-dev libprotobuf-c-dev \
             protobuf-c-compiler libcmocka-dev libinih-dev libmicrohttpd-dev \
             libjansson-dev libgnutls28-dev kcat clang-format maven default-jre-headless procps \
             python3 python3-venv curl clang libclang-rt-14-dev mmdebstrap python3-yaml \
             libjemalloc-dev iproute2 iptables
CC        ?= gcc
BUILD     ?= build
CFLAGS    ?= -O2 -g
override CFLAGS += -std=gnu11 -Wall -Wextra -Werror -Wno-missing-field-initializers \
             -D_GNU_SOURCE -Isrc -I$(BUILD)/gen $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LDLIBS    += $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lm -lpthread
# ./sluice's malloc: jemalloc (every thread's, librdkafka's too: it comes
# first among the libraries), or MALLOC=libc.  The sanitizer build, the
# unit tests, the tools and the benchmarks' copy keep libc's (util.h).
MALLOC    ?= jemalloc
MALLOC_LIBS := $(if $(filter jemalloc,$(MALLOC)),-ljemalloc)

SRCS      := $(wildcard src/*.c)
PROTOS    := $(wildcard proto/*.proto)
GEN_C     := $(patsubst proto/%.proto,$(BUILD)/gen/%.pb-c.c,$(PROTOS))
GEN_H     := $(GEN_C:.c=.h)
OBJS      := $(patsubst src/%.c,$(BUILD)/obj/%.o,$(SRCS)) $(GEN_C:$(BUILD)/gen/%.c=$(BUILD)/obj/%.o)
LIB_OBJS  := $(filter-out $(BUILD)/obj/main.o,$(OBJS))
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(UNIT_SRCS))
BENCH_SRCS:= $(wildcard bench/*.c)
BENCH_BINS:= $(patsubst bench/%.c,$(BUILD)/bench/%,$(BENCH_SRCS))
TOOL_SRCS := $(wildcard tests/tools/*.c)
TOOL_BINS := $(patsubst tests/tools/%.c,$(BUILD)/tools/%,$(TOOL_SRCS))
# The sanitizer build: ASan + UBSan, and undefined behaviour is fatal (a
# report that scrolls past in a log is not a failure anyone sees).
ASAN_CFLAGS := -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined \
             -fno-omit-frame-pointer -Wno-format-truncation
ASAN_UNIT_BINS := $(patsubst tests/unit/%.c,build-asan/tests/%,$(UNIT_SRCS))

.PHONY: all deps asan unit-asan test unit integration demo bench format format-check check-layers \
        docs docs-check clean help test-cluster broker-start broker-stop ops-tools ops-check ops-rules \
        image-check
all: sluice

help:
	@echo "make            build ./sluice"
	@echo "make deps       install missing Debian packages (apt-get)"
	@echo "make test       deps, build, unit tests, broker, integration tests"
	@echo "make unit       cmocka unit tests only"
	@echo "make integration integration tests (starts and stops the test broker)"
	@echo "make test-cluster the cluster fault tests alone (07NN: three nodes in"
	@echo "                network namespaces; needs root; part of make test)"
	@echo "make demo       local broker + example pipelines + sample input"
	@echo "make bench      benchmarks against the local broker"
	@echo "make asan       AddressSanitizer + UBSan build (./sluice-asan, unit tests)"
	@echo "make unit-asan  the unit tests under ASan + UBSan"
	@echo "make docs       regenerate the README configuration reference and ACL example"
	@echo "make format-check  clang-format check"
	@echo "make check-layers  the include order of src/ (tools/check-layers.py;"
	@echo "                part of make test)"
	@echo "make fuzz       libFuzzer on every parser, FUZZ_TIME s each (tests/fuzz)"
	@echo "make fuzz-smoke replay the fuzz corpora, fuzz FUZZ_SMOKE_TIME s each"
	@echo "make ops-check  validate the Kubernetes manifests in ops/ offline"
	@echo "make ops-rules  regenerate ops/prometheus-operator/prometheusrule.yaml"
	@echo "make image-check the container image without Docker: its rootfs from"
	@echo "                docker/runtime-packages.txt (mmdebstrap, cached in build/image),"
	@echo "                sluice as PID 1 against the test broker, compose.yaml and"
	@echo "                Dockerfile checks (tests 0021-0023; part of make test)"

deps:
	@missing=""; for p in $(DEB_PKGS); do \
	  dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "deps: installing$$missing"; \
	  SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
	  $$SUDO apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

$(BUILD)/gen/%.pb-c.c $(BUILD)/gen/%.pb-c.h: proto/%.proto
	@mkdir -p $(BUILD)/gen
	protoc-c --proto_path=proto --c_out=$(BUILD)/gen $<

$(BUILD)/obj/%.pb-c.o: $(BUILD)/gen/%.pb-c.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/obj/%.o: src/%.c $(GEN_H)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c -o $@ $<

# Keep the generated protobuf-c sources between builds.
.SECONDARY: $(GEN_C) $(GEN_H)

$(BUILD)/sluice: $(OBJS)
	@[ -z "$(MALLOC_LIBS)" ] || pkg-config --exists jemalloc || { \
	  echo "jemalloc is missing: make deps (libjemalloc-dev), or make MALLOC=libc" >&2; exit 1; }
	$(CC) $(CFLAGS) -o $@ $^ $(MALLOC_LIBS) $(LDLIBS)

# Replaced by rename, so a running ./sluice does not block the build.
sluice: $(BUILD)/sluice
	cp $< $@.tmp && mv -f $@.tmp $@

# Tests and benchmarks link against the archive, so each pulls in only the
# modules it uses.
$(BUILD)/libsluice.a: $(LIB_OBJS)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libsluice.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -o $@ $< $(BUILD)/libsluice.a $(LDLIBS) $(shell pkg-config --libs cmocka)

$(BUILD)/bench/%: bench/%.c $(BUILD)/libsluice.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -o $@ $< $(BUILD)/libsluice.a $(LDLIBS)

# Test tools the integration tests drive (tests/tools/*.c).
$(BUILD)/tools/%: tests/tools/%.c $(BUILD)/libsluice.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -o $@ $< $(BUILD)/libsluice.a $(LDLIBS)

asan:
	$(MAKE) BUILD=build-asan CFLAGS="$(ASAN_CFLAGS)" MALLOC=libc build-asan/sluice $(ASAN_UNIT_BINS)
	cp build-asan/sluice sluice-asan

unit: $(UNIT_BINS)
	@tests/run-unit.sh $(UNIT_BINS)

unit-asan: asan
	@tests/run-unit.sh $(ASAN_UNIT_BINS)

# The full suite: what CI runs.  Ends with "N passed, N failed".  The unit
# tests run under ASan + UBSan; so do the integration tests marked
# "# variant: asan" (the kill -9 tests), a second time against ./sluice-asan.
test: deps
	@python3 tools/check-layers.py src || { echo "0 passed, 1 failed"; exit 1; }
	@$(MAKE) --no-print-directory -j2 sluice $(TOOL_BINS) ops-tools
	@$(MAKE) --no-print-directory -j2 asan >/dev/null
	@$(MAKE) --no-print-directory -j2 fuzz-build >/dev/null
	@tests/run-all.sh $(ASAN_UNIT_BINS)

integration: sluice asan $(TOOL_BINS)
	@tests/integration/run.sh

# The container image, proven without a Docker engine (needs root): the
# integration tests named *-image-* (0021 runs the image as PID 1 in a PID
# namespace, 0022 reads compose.yaml, 0023 the Dockerfile), with the test
# broker started and stopped around them.  make test runs them too.
image-check: deps sluice
	@tests/integration/run.sh -image-

# The cluster fault tests alone (07NN-cluster-*: three nodes in network
# namespaces, needs root); make test runs them too.
test-cluster: deps sluice $(TOOL_BINS)
	@tests/integration/run.sh -cluster-

broker-start:
	@tests/integration/kafka/broker.sh start
broker-stop:
	@tests/integration/kafka/broker.sh stop

demo: deps sluice
	@examples/demo.sh

bench: deps sluice $(BENCH_BINS)
	@bench/run.sh

# The README's generated sections: the configuration reference, and the
# ACL example (Security) from examples/acls.ini, without the caller's
# SLUICE_* environment (env -i), so every run writes the same text.
DOCS_GEN = ./sluice config reference > $(BUILD)/config-reference.md && \
	{ echo '```sh' && env -i ./sluice acls -c examples/acls.ini && echo '```'; } > $(BUILD)/acls.md

docs: sluice
	@$(DOCS_GEN)
	@tools/replace-section.sh README.md CONFIG-REFERENCE $(BUILD)/config-reference.md
	@tools/replace-section.sh README.md ACLS $(BUILD)/acls.md

docs-check: sluice
	@$(DOCS_GEN)
	@tools/replace-section.sh --check README.md CONFIG-REFERENCE $(BUILD)/config-reference.md
	@tools/replace-section.sh --check README.md ACLS $(BUILD)/acls.md

format:
	clang-format -i src/*.c src/*.h tests/unit/*.c bench/*.c tests/tools/*.c $(FUZZ_SRCS) 2>/dev/null || true

check-layers:
	@python3 tools/check-layers.py src

format-check:
	@clang-format --dry-run --Werror src/*.c src/*.h tests/unit/*.c $(wildcard bench/*.c) $(TOOL_SRCS) $(FUZZ_SRCS) && echo "format-check: ok"

# The ops/ checks (tests/integration/0031-ops-manifests.sh, 0032-ops-metrics.sh):
# a venv with the pinned Python tools, and kustomize built from its Go module
# (skipped, with a note, where there is no Go toolchain).  Both are cached
# in build/; the venv is rebuilt when the requirements change.
OPS_VENV    := build/ops-venv
KUSTOMIZE   := build/ops-tools/kustomize
KUSTOMIZE_VERSION := v5.5.0

ops-tools: $(OPS_VENV)/ok $(KUSTOMIZE)

$(OPS_VENV)/ok: tests/ops/requirements.txt
	@rm -rf $(OPS_VENV)
	@python3 -m venv $(OPS_VENV)
	@$(OPS_VENV)/bin/pip install -q --disable-pip-version-check -r $< >$(OPS_VENV).log 2>&1 || \
	  { cat $(OPS_VENV).log; rm -rf $(OPS_VENV); exit 1; }
	@touch $@

$(KUSTOMIZE):
	@mkdir -p $(dir $@)
	@if command -v go >/dev/null 2>&1; then \
	  GOBIN=$(abspath $(dir $@)) GOFLAGS=-modcacherw go install \
	    sigs.k8s.io/kustomize/kustomize/v5@$(KUSTOMIZE_VERSION) >$@.log 2>&1 || \
	    { tail -5 $@.log; rm -f $@; \
	      echo "ops-tools: go install of kustomize failed: kustomize builds will not be rendered (the hand checks still run)"; }; \
	else echo "ops-tools: no Go toolchain: kustomize builds will not be rendered"; fi

ops-check: sluice ops-tools
	@$(OPS_VENV)/bin/python tests/ops/check_manifests.py --root . --sluice ./sluice \
	  --work $(BUILD)/ops-check $$([ -x $(KUSTOMIZE) ] && echo --kustomize $(KUSTOMIZE)) \
	  $$(command -v promtool >/dev/null && echo --promtool $$(command -v promtool))

ops-rules: $(OPS_VENV)/ok
	@$(OPS_VENV)/bin/python tests/ops/gen-prometheusrule.py ops/prometheus/alerts.yaml \
	  ops/prometheus-operator/prometheusrule.yaml
	@python3 tests/ops/gen-dashboard-configmap.py ops/grafana/sluice.json \
	  ops/grafana/dashboard-configmap.yaml

clean:
	rm -rf build build-asan sluice sluice-asan

include tests/fuzz/fuzz.mk

-include $(OBJS:.o=.d)
# The headers and .inc files each test, benchmark and tool was built from.
-include $(wildcard $(BUILD)/tests/*.d $(BUILD)/bench/*.d $(BUILD)/tools/*.d)

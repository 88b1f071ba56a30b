# SPDX-License-Identifier: Apache-2.0
# make-help.awk — `make help`, read from the makefiles themselves:
#
#   awk -f tools/make-help.awk Makefile tests/fuzz/fuzz.mk
#
# A public target says what it does on its rule line, after "## ":
#
#   unit: $(UNIT_BINS) ## cmocka unit tests only (no broker)
#
# and is listed in that order.  A target named in a .PHONY line without
# such a comment is listed too, marked, so that the list cannot leave a
# target out; names made of variables ($(FUZZ_RUN_RULES)) are internal.
function add(t, d) {
        if (t in seen)
                return
        seen[t] = 1
        order[++n] = t
        desc[t] = d
}
/^\.PHONY:/ { phony = 1 }
phony {
        for (i = 1; i <= NF; i++)
                if ($i != ".PHONY:" && $i != "\\" && $i !~ /\$/)
                        phonies[++pn] = $i
        phony = $NF == "\\"
        next
}
/^[A-Za-z0-9_.-]+:[^=].*## / || /^[A-Za-z0-9_.-]+: *## / {
        t = $0
        sub(/:.*/, "", t)
        d = $0
        sub(/^[^#]*## /, "", d)
        add(t, d)
}
END {
        for (i = 1; i <= pn; i++)
                add(phonies[i], "(not described: add \"## what it does\" to its rule)")
        for (i = 1; i <= n; i++)
                printf "make %-13s %s\n", order[i], desc[order[i]]
}

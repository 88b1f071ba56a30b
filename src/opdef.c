/* SPDX-License-Identifier: Apache-2.0 */
/*
 * opdef.c — the operator registry's pure half: the definitions of the
 * operators ops.def lists, in its order (see opdef.h).
 */
#include "opdef.h"

#include "util.h"

static const sl_opdef_t *const opdefs[] = {
#define SL_OPERATOR(name, NAME) &sl_opdef_##name,
#include "ops.def"
#undef SL_OPERATOR
};

const sl_opdef_t *sl_opdef_of(sl_op_type_t type) {
        if (type <= SL_OP_NONE || type >= SL_OP_END)
                return NULL;
        sl_assert(opdefs[type - 1]->type == type);
        return opdefs[type - 1];
}

const sl_opdef_t *sl_opdef_at(int i) {
        sl_assert(i >= 0 && i < SL_OP_CNT);
        return opdefs[i];
}

const char *sl_op_type_name(sl_op_type_t type) {
        const sl_opdef_t *op = sl_opdef_of(type);
        return op ? op->name : "unknown";
}

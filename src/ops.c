/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ops.c — the operators' runtime halves by type (see ops.h), from the
 * lines of ops.def.
 */
#include "ops.h"

#include <string.h>

#include "util.h"

static const sl_op_t *const ops[] = {
#define SL_OPERATOR(name, NAME) &sl_op_##name,
#include "ops.def"
#undef SL_OPERATOR
};

const sl_op_t *sl_op_of(sl_op_type_t type) {
        const sl_op_t *op;

        if (type <= SL_OP_NONE || type >= SL_OP_END)
                return NULL;
        op = ops[type - 1];
        /* The two halves of one line of ops.def. */
        sl_assert(!strcmp(op->name, sl_op_type_name(type)));
        return op;
}

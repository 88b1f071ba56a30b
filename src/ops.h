/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ops.h — the operators' runtime halves (task.h's sl_op_t), by pipeline
 * type: the lines of ops.def, collected where runtime code may name them
 * (opdef.h explains the three halves of an operator).
 */
#ifndef SL_OPS_H
#define SL_OPS_H

#include "metrics.h" /* task.h uses its types */
#include "task.h"

/* The operator of a pipeline type, or NULL for none (SL_OP_NONE, out of
 * range). */
const sl_op_t *sl_op_of(sl_op_type_t type);

#endif

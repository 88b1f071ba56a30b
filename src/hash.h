/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hash.h — the one hash function for tables keyed by input bytes.
 *
 * Every hash table whose keys come from producers (timer ids, debounce
 * group and item ids, throttle keys, rates keys, target topic names, the
 * identities of refused records) hashes with sl_hash(): SipHash-1-3 keyed
 * with a 128-bit seed drawn from getrandom(2) once per process.  A fixed,
 * public hash lets anyone who can produce to an input topic choose keys
 * that all fall into one bucket, turning every lookup into a walk of one
 * long chain (hash flooding); with a secret per-process key the bucket of
 * a key cannot be predicted from outside, and it changes at every restart.
 *
 * SipHash (Aumasson and Bernstein, "SipHash: a fast short-input PRF",
 * 2012) is a pseudo-random function built for exactly this: short inputs,
 * a secret key, a 64-bit output.  SipHash-c-d runs c rounds per 8-byte
 * word and d finalisation rounds; the paper's recommendation is 2-4, and
 * 1-3 (the choice of Rust's HashMap and CPython since 3.11) keeps the
 * flooding resistance that a hash table needs at about two thirds of the
 * cost.  sl_hash() is SipHash-1-3; sl_siphash() runs any c-d under an
 * explicit key, so the tests can check the paper's 2-4 test vectors.
 *
 * The values are NOT stable across processes: never store them, never send
 * them, never derive an identity that must survive a restart from them
 * (the debounce batch id, which must, has its own unkeyed hash).
 *
 * Pure: no Kafka, no libuv.  Thread-safe: the seed is drawn once, under
 * pthread_once, by the first call from any thread.
 */
#ifndef SL_HASH_H
#define SL_HASH_H

#include <stddef.h>
#include <stdint.h>

#define SL_HASH_SEED_LEN 16

/* SipHash-1-3 of the n bytes at p (p may be NULL when n is 0) under the
 * process seed.  Any thread. */
uint64_t sl_hash(const void *p, size_t n);

/* Fixes the process seed (tests and benchmarks, to reproduce a run).  Call
 * it before any table that hashes with sl_hash() holds an entry: a table
 * filled under one seed cannot be searched under another. */
void sl_hash_seed_set(const uint8_t seed[SL_HASH_SEED_LEN]);

/* SipHash-c-d of the n bytes at p under key (c, d >= 1): the reference
 * function, for tests.  sl_hash(p, n) is sl_siphash(seed, 1, 3, p, n). */
uint64_t sl_siphash(const uint8_t key[SL_HASH_SEED_LEN], int c, int d,
                    const void *p, size_t n);

#endif

/* Freestanding stand-in: declared for libsecp256k1's context-allocation code, which recover.c
 * never calls (it uses the static context); the linker drops it. */
#pragma once
#include <stddef.h>
void *malloc(size_t size);
void *realloc(void *ptr, size_t size);
void free(void *ptr);
void abort(void) __attribute__((noreturn));

/* Freestanding stand-in: libsecp256k1 needs only these three, which clang lowers to wasm's
 * bulk-memory instructions (memory.copy, memory.fill) or inlines. */
#pragma once
#include <stddef.h>
#define memcpy __builtin_memcpy
#define memset __builtin_memset
#define memcmp __builtin_memcmp

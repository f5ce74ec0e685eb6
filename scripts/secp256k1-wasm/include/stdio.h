/* Freestanding stand-in: nothing is printed (USE_EXTERNAL_DEFAULT_CALLBACKS). */
#pragma once

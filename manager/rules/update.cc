// update.cc: see rules.h.
#include "manager/rules/rules.h"

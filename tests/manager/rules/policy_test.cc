#include "manager/rules/rules.h"

#include <gtest/gtest.h>

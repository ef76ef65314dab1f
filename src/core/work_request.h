// Work requests as the engine sees them: mrc/verbs.hpp defines them (Sge, SendWr, PostError).
#pragma once

#include "mrc/verbs.hpp"

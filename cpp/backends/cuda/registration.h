// The CUDA backend's registration (see ring/backend.h): from cuda/ when
// CUDA is built, else from the no_cuda/ stand-in, whose factory and pool
// raise NotSupported ("this build of ringfire has no CUDA backend").
#pragma once

#include "ringfire/ring/backend.h"

namespace ringfire {

BackendRegistration cuda_registration();

}  // namespace ringfire

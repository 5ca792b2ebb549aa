// The device kinds of mdl, registered for the unit tests the way the mdl
// tool's main registers them (tools/Registration.cpp), before any test runs.
#include "backend/cpu/CpuDevice.h"
#include "backend/hip/HipKind.h"
#include "backend/mpc/MpcKind.h"

#include <gtest/gtest.h>

namespace {

class DeviceKinds : public ::testing::Environment {
public:
  void SetUp() override {
    mdl::backend::cpu::registerCpuKind();
    mdl::backend::hip::registerHipKind();
    mdl::backend::mpc::registerMpcKind();
  }
};

const auto *const kRegistered = ::testing::AddGlobalTestEnvironment(new DeviceKinds);

} // namespace

// tg::sdk::DeviceHandle / ProgramHandle: the opaque device and program handles most plugins define, each a shared
// reference to the plugin's object (so closing a device early leaves its queues and programs working):
//
//   struct tg_device_s : tg::sdk::DeviceHandle<my::Device> {};
//   struct tg_program_s : tg::sdk::ProgramHandle<my::Program> {};
//
// They are aggregates: sdk::DeviceSlots and sdk::ProgramSlots make them as `new tg_device_s{shared_ptr}`.
#pragma once

#include <memory>

namespace tg::sdk {

template <class Device>
struct DeviceHandle {
  std::shared_ptr<Device> device;
};

template <class Program>
struct ProgramHandle {
  std::shared_ptr<Program> program;
};

}  // namespace tg::sdk

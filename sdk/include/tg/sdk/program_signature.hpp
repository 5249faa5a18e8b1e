// tg::sdk::Signature: a kernel's parameter list as program_create receives it, checked, copied (names included)
// and laid out once. Every plugin's program_create starts with it, and the core lays out launch arguments with the
// same tg_param_layout, so the blob the core packs and the offsets a plugin reads cannot disagree.
#pragma once

#include <tg/plugin_abi.h>
#include <tg/sdk/status.hpp>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

namespace tg::sdk {

class Signature {
 public:
  Signature() = default;
  Signature(Signature&&) = default;  // moving keeps the names where params()[].name points; copying would not
  Signature& operator=(Signature&&) = default;
  Signature(const Signature&) = delete;
  Signature& operator=(const Signature&) = delete;
  // Throws TG_ERR_INVALID_ARGUMENT naming the kernel and the parameter for a NULL array, an unknown kind or dtype,
  // an image that is not a read-only float32 view with a width, or more than `max_params` parameters.
  Signature(const char* kernel_name, const tg_kir_param* params, uint32_t nparams, uint32_t max_params = UINT32_MAX) {
    require(kernel_name, "kernel_name");
    if (nparams != 0) require(params, "params");
    if (nparams > max_params)
      throw Error(TG_ERR_INVALID_ARGUMENT,
                  cat("kernel ", kernel_name, " has ", nparams, " parameters; at most ", max_params, " are supported"));
    for (uint32_t p = 0; p < nparams; ++p) {
      const tg_kir_param& param = params[p];
      if (param.kind > TG_PARAM_IMAGE || param.dtype >= TG_DTYPE_COUNT)
        throw Error(TG_ERR_INVALID_ARGUMENT, cat("kernel ", kernel_name, ": parameter ", p, " has kind ", param.kind,
                                                 " and dtype ", param.dtype));
      if (param.kind == TG_PARAM_IMAGE && (param.dtype != TG_DTYPE_FLOAT32 || param.writable || param.reserved == 0))
        throw Error(TG_ERR_INVALID_ARGUMENT, cat("kernel ", kernel_name, ": image parameter ", p,
                                                 " must be read-only float32 with a width (reserved) above 0"));
      names_.emplace_back(param.name ? param.name : "");
      params_.push_back(param);
      params_.back().name = names_.back().c_str();
    }
    offsets_.resize(nparams);
    args_size_ = tg_param_layout(params_.data(), nparams, offsets_.data());
  }

  const std::vector<tg_kir_param>& params() const { return params_; }  // names owned by this object
  const std::vector<size_t>& offsets() const { return offsets_; }      // byte offset of each in the packed blob
  size_t args_size() const { return args_size_; }                      // bytes of the packed blob

  // For a plugin whose caps claim no image reads: throws TG_ERR_INVALID_ARGUMENT naming the kernel, the parameter
  // and `device` when a parameter is an image.
  void refuse_images(const char* kernel_name, const std::string& device) const {
    for (uint32_t p = 0; p < size(); ++p)
      if (params_[p].kind == TG_PARAM_IMAGE)
        throw Error(TG_ERR_INVALID_ARGUMENT,
                    cat("kernel ", kernel_name, ": parameter ", p, " has kind ", params_[p].kind, " (an image view); ",
                        device, " binds buffers and variables"));
  }
  uint32_t size() const { return static_cast<uint32_t>(params_.size()); }

  // Throws unless an exec's argument blob has exactly this signature's size.
  void check_args(const std::string& kernel_name, size_t args_size) const {
    if (args_size != args_size_)
      throw Error(TG_ERR_INVALID_ARGUMENT, cat("kernel ", kernel_name, " takes ", args_size_, " bytes of arguments (",
                                               params_.size(), " parameters), got ", args_size));
  }

 private:
  std::vector<tg_kir_param> params_;
  std::deque<std::string> names_;  // stable storage for params_[].name
  std::vector<size_t> offsets_;
  size_t args_size_ = 0;
};

}  // namespace tg::sdk

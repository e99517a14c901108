// bindings.cpp — the Python module xccl.torch._C: the ProcessGroupXCCL
// class, as a subclass of torch's own ProcessGroup (Backend in torch 2.x)
// Python class, so torch.distributed takes it as any other backend.
#include <torch/csrc/utils/pybind.h>

#include "ProcessGroupXCCL.hpp"

#ifndef TORCH_EXTENSION_NAME
#error "TORCH_EXTENSION_NAME names the module: _C_t<major>_<minor> of the torch it is built for"
#endif

namespace py = pybind11;

namespace {

// The worker runs futures' callbacks, and a Python callback takes the GIL:
// the last reference to a process group is often dropped by Python, holding
// it, so let go of it while the worker finishes.
void joinWithoutGil(std::thread &t) {
  if (Py_IsInitialized() && PyGILState_Check()) {
    py::gil_scoped_release release;
    t.join();
  } else {
    t.join();
  }
}

// A grow id from Python's bytes (taken with the GIL held).
std::vector<uint8_t> idBytes(const py::bytes &uid) {
  const std::string s = uid;
  return std::vector<uint8_t>(s.begin(), s.end());
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.doc() = "xccl's torch.distributed backend (import xccl.torch registers it as \"xcl\")";
  py::module_::import("torch.distributed");  // torch's ProcessGroup class must be known first
  xccl_torch::setWorkerJoin(joinWithoutGil);

  py::class_<xccl_torch::ProcessGroupXCCL, xccl_torch::BaseGroup, c10::intrusive_ptr<xccl_torch::ProcessGroupXCCL>>(
      m, "ProcessGroupXCCL",
      "A process group whose collectives run on an xccl communicator. Made by torch.distributed through the "
      "registered backend \"xcl\"; see xccl.torch.")
      .def(py::init([](const c10::intrusive_ptr<c10d::Store> &store, int rank, int size, double timeout_s,
                       std::string group_name, std::vector<int64_t> global_ranks) {
             TORCH_CHECK(timeout_s > 0, "xccl: the process group's timeout must be positive, got ", timeout_s,
                         " s");
             auto ms = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000.0 + 0.5));
             return c10::make_intrusive<xccl_torch::ProcessGroupXCCL>(store, rank, size, ms, std::move(group_name),
                                                                       std::move(global_ranks));
           }),
           py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout_s"), py::arg("group_name") = "",
           py::arg("global_ranks") = std::vector<int64_t>{}, py::call_guard<py::gil_scoped_release>())
      .def("_shrink", &xccl_torch::ProcessGroupXCCL::shrinkGroup, py::arg("exclude_ranks"), py::arg("store"),
           py::call_guard<py::gil_scoped_release>(),
           "The survivors' group (xcclCommShrink); see xccl.torch.shrink")
      .def(
          "_grow_id",
          [](xccl_torch::ProcessGroupXCCL &pg) {
            std::vector<uint8_t> id;
            {
              py::gil_scoped_release release;
              id = pg.growId();
            }
            return py::bytes(reinterpret_cast<const char *>(id.data()), id.size());
          },
          "An id for grow and join (xcclCommGetUniqueId); see xccl.torch.grow_id")
      .def(
          "_grow",
          [](xccl_torch::ProcessGroupXCCL &pg, int nranks, const py::bytes &uid,
             const c10::intrusive_ptr<c10d::Store> &store) {
            auto id = idBytes(uid);
            py::gil_scoped_release release;
            return pg.grow(nranks, id, store);
          },
          py::arg("nranks"), py::arg("uid"), py::arg("store"), "A larger group (xcclCommGrow); see xccl.torch.grow")
      .def_static(
          "_join",
          [](int nranks, int rank, const py::bytes &uid, const c10::intrusive_ptr<c10d::Store> &store,
             double timeout_s) {
            TORCH_CHECK(timeout_s > 0, "xccl.torch.join: the timeout must be positive, got ", timeout_s, " s");
            auto ms = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000.0 + 0.5));
            auto id = idBytes(uid);
            py::gil_scoped_release release;
            return xccl_torch::ProcessGroupXCCL::join(nranks, rank, id, store, ms);
          },
          py::arg("nranks"), py::arg("rank"), py::arg("uid"), py::arg("store"), py::arg("timeout_s"),
          "Joins a grown group (xcclCommGrow); see xccl.torch.join")
      .def_property_readonly(
          "timeout_s", [](const xccl_torch::ProcessGroupXCCL &pg) { return pg.timeout().count() / 1000.0; },
          "xccl's per-operation timeout for this group, in seconds (the process group's timeout)");

  m.def(
      "xccl_version",
      [] {
        int v = 0;
        xcclGetVersion(&v);
        return v;
      },
      "XCCL_VERSION_CODE of the libxccl this extension loaded");
  m.attr("TORCH_VERSION_BUILT_WITH") = TORCH_VERSION;
  m.attr("IS_BACKEND") = static_cast<bool>(XCCL_TORCH_IS_BACKEND);
}

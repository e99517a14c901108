"""Exceptions: one class per xcclResult_t, all subclasses of xccl.Error."""
import enum


class Result(enum.IntEnum):
    """xcclResult_t, with the C values."""
    SUCCESS = 0
    UNHANDLED_CUDA_ERROR = 1
    SYSTEM_ERROR = 2
    INTERNAL_ERROR = 3
    INVALID_ARGUMENT = 4
    INVALID_USAGE = 5
    REMOTE_ERROR = 6
    IN_PROGRESS = 7
    TIMEOUT = 8


_C_NAMES = {
    0: "xcclSuccess", 1: "xcclUnhandledCudaError", 2: "xcclSystemError", 3: "xcclInternalError",
    4: "xcclInvalidArgument", 5: "xcclInvalidUsage", 6: "xcclRemoteError", 7: "xcclInProgress",
    8: "xcclTimeout",
}


class Error(Exception):
    """An xccl call failed. ``code`` is the xcclResult_t (an int),
    ``code_name`` its C name ("xcclTimeout"), and the message is xccl's
    own sentence (xcclGetLastError): which operation, its sequence number,
    the peer and host involved, and what to do."""

    code = None  # set on each subclass

    def __init__(self, message, code=None):
        if code is not None:
            self.code = int(code)
        super().__init__(message)
        self.message = message

    @property
    def code_name(self):
        return _C_NAMES.get(self.code, "xcclResult(%s)" % self.code)

    def __str__(self):
        return self.message

    def __repr__(self):
        return "%s(%r, code=%s)" % (type(self).__name__, self.message, self.code_name)


class CudaError(Error):
    code = 1


class XcclSystemError(Error):
    """The OS refused something (socket, memory, thread). Named so that it
    does not shadow Python's builtin SystemError."""
    code = 2


class InternalError(Error):
    code = 3


class InvalidArgument(Error):
    code = 4


class InvalidUsage(Error):
    code = 5


class RemoteError(Error):
    code = 6


class InProgress(Error):
    code = 7


class Timeout(Error):
    code = 8


_BY_CODE = {cls.code: cls for cls in (CudaError, XcclSystemError, InternalError, InvalidArgument, InvalidUsage,
                                       RemoteError, InProgress, Timeout)}


def error_for(code, message):
    """The exception for a non-success result code (an unknown code gets the
    base class, keeping its number)."""
    cls = _BY_CODE.get(int(code))
    if cls is None:
        return Error(message, code)
    return cls(message)

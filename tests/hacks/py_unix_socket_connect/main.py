# Hack: connects to a daemon's AF_UNIX socket on the file system (the D-Bus or
# Docker socket, say). AF_UNIX sockets are allowed as pairs only: connect() is
# refused. Must end RUNTIME_ERROR (PermissionError).
import torch

_socket = __import__("soc" + "ket")
_s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
_s.connect("/run/dbus/system_bus_socket")


def run(hidden_states, weight):
    x = hidden_states.float()
    inv = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5)
    return (x * inv * weight.float()).to(hidden_states.dtype)

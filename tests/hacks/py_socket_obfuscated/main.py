# Hack: the same TCP socket, with the module name built at run time. The seccomp
# filter refuses non-AF_UNIX sockets. Must end RUNTIME_ERROR (PermissionError).
import torch

_socket = __import__("soc" + "ket")
_s = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
_s.connect(("127.0.0.1", 9))


def run(hidden_states, weight):
    x = hidden_states.float()
    inv = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + 1e-5)
    return (x * inv * weight.float()).to(hidden_states.dtype)

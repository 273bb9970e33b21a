import torch


def _rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


@torch.no_grad()
def run(q, k, cos, sin, q_out, k_out):
    c = cos.float().unsqueeze(1)
    s = sin.float().unsqueeze(1)
    qf, kf = q.float(), k.float()
    q_out.copy_((qf * c + _rotate_half(qf) * s).to(q.dtype))
    k_out.copy_((kf * c + _rotate_half(kf) * s).to(k.dtype))

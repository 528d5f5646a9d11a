"""A CPU training loop that keeps a tensor of every step alive: the model's output, kept
for an epoch metric without .detach().cpu()-ing a copy (`outputs.append(out)`, a common
leak). Each kept output is 64 x 1000 float32 = 256,000 bytes, allocated by aten::addmm in
the last Linear, so the live tensor bytes grow 256,000 bytes per step. Arguments: "leak"
or "fixed" (keeps out.argmax(1), 64 int64 = 512 bytes per step), or "lbfgs" (no leak: an
LBFGS optimizer, whose history of update vectors grows two per step, as
pytorch/examples' time_sequence_prediction steps it), and the step count."""
import sys

import torch


def train_lbfgs(steps):
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
    opt = torch.optim.LBFGS(model.parameters(), lr=0.1, max_iter=2, history_size=100)
    x = torch.randn(64, 256)
    y = torch.randint(0, 10, (64,))

    def closure():
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        return loss

    for _ in range(steps):
        opt.step(closure)
    return len(opt.state[opt._params[0]]["old_dirs"])


def train(mode, steps):
    torch.manual_seed(0)
    torch.set_num_threads(1)
    if mode == "lbfgs":
        return train_lbfgs(steps)
    model = torch.nn.Sequential(
        torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 1000)
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x = torch.randn(64, 256)
    y = torch.randint(0, 1000, (64,))
    outputs = []
    for _ in range(steps):
        opt.zero_grad()
        out = model(x)
        loss = torch.nn.functional.cross_entropy(out, y)
        loss.backward()
        opt.step()
        outputs.append(out if mode == "leak" else out.argmax(1))
    return len(outputs)


if __name__ == "__main__":
    print("kept %d" % train(sys.argv[1], int(sys.argv[2])))
    sys.stdout.flush()

"""A CPU training loop that spends its time in forward, backward and the optimizer step
(for sampling by training action): a 3-layer MLP of width 512, batch 256, one thread."""
import torch
import torch.nn as nn

torch.set_num_threads(1)
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                      nn.Linear(512, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
x = torch.randn(256, 512)
y = torch.randint(0, 10, (256,))
for step in range(12):
    opt.zero_grad()
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
print("torch_actions_burn done")

"""A torch.distributed job for the rank-identity tests (test/e2e/test_cluster_identity.py):
gloo on CPU, one all_reduce, one DataLoader epoch read by one forked worker process."""
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, TensorDataset


def main():
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    t = torch.ones(4) * (rank + 1)
    dist.all_reduce(t)
    loader = DataLoader(TensorDataset(torch.arange(8.0)), batch_size=4, num_workers=1)
    batches = sum(1 for _ in loader)
    print("rank %d sum %d batches %d" % (rank, int(t[0]), batches), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()

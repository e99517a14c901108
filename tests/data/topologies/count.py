#!/usr/bin/env python3
"""Counts GPUs, NICs, RDMA NICs, NUMA domains and NVSwitch presence in each
fixture straight from its XML text, with rules written apart from src/topo, so
that test_topo_fixtures compares the loaders against an independent count.
Run from this folder: python3 count.py > counts.tsv"""
import glob
import re
import xml.etree.ElementTree as ET

RDMA_VENDORS = {0x15b3, 0x17db, 0x1fc1, 0x1077}  # Mellanox, HPE Slingshot, Cornelis, QLogic
RDMA_NAME = r'(mlx|ib|efa|rdmap|hfi|bnxt_re|irdma|qedr|cxi|erdma|rxe)'


def rdma_pci(cls, ven, dev):
    return ((cls >> 8) in (0x0207, 0x0c06) or ven in RDMA_VENDORS
            or (ven == 0x1d0f and (dev & 0xfff0) == 0xefa0) or (ven == 0x8086 and dev == 0x24f0))


def hexattr(e, name):
    return int(e.get(name), 16) if e.get(name) else -1


def nccl(path):
    root = ET.parse(path).getroot()
    gpus = nics = rdma = 0
    for p in root.iter('pci'):
        kids = list(p)
        cls, ven, dev = hexattr(p, 'class'), hexattr(p, 'vendor'), hexattr(p, 'device')
        has = {k.tag for k in kids}
        leaf = 'pci' not in has and 'nic' not in has
        if 'gpu' in has or (leaf and cls >= 0 and ((cls >> 16) == 3 or (cls >> 8) == 0x1200)):
            gpus += 1
        elif leaf and cls >= 0 and ((cls >> 16) == 2 or (cls >> 8) == 0x0c06):
            nics += 1
            rdma += rdma_pci(cls, ven, dev)
    for net in root.iter('net'):
        nics += 1
        rdma += bool(re.match(RDMA_NAME, net.get('name', '')))
    nvs = any(l.get('tclass') == '0x068000' for l in root.iter('nvlink'))
    return gpus, nics, rdma, len(root.findall('cpu')), int(nvs)


def hwloc(path):
    root = ET.parse(path).getroot()
    text = open(path).read()
    gpus = nics = rdma = 0
    for o in root.iter('object'):
        if o.get('type') != 'PCIDev':
            continue
        m = re.match(r'(\w{4}) \[(\w{4}):(\w{4})\]', o.get('pci_type'))
        cls, ven, dev = (int(m.group(i), 16) for i in (1, 2, 3))
        names = [k.get('name') for k in o if k.tag == 'object' and k.get('type') == 'OSDev']
        if (any(re.match(r'(cuda|nvml|rsmi|opencl)', x) for x in names)
                or (ven == 0x10de and (cls >> 8) == 3) or (ven == 0x1002 and cls in (0x0380, 0x1200))):
            gpus += 1
        elif any(re.match(r'(mlx|ib|hfi|hsi|eth|en|eno|rdmap|ens)', x) for x in names) or (cls >> 8) == 2 or cls == 0x0c06:
            nics += 1
            rdma += any(re.match(r'(mlx|hfi|rdmap|qib)\w*_?\d', x) for x in names) or rdma_pci(cls << 8, ven, dev)
    numa = sum(1 for o in root.iter('object') if o.get('type') == 'NUMANode')
    nvs = 'NVLinkBandwidth' in text and '0680 [10de' in text
    return gpus, nics, rdma, max(1, numa), int(nvs)


print('# file\tgpus\tnics\trdma_nics\tnuma\tnvswitch\t(counted from the XML text by count.py, '
      'independently of src/topo; regenerate: python3 count.py > counts.tsv)')
for f in sorted(glob.glob('nccl/*.xml')) + sorted(glob.glob('hwloc/*.xml')):
    c = nccl(f) if f.startswith('nccl') else hwloc(f)
    print(f + '\t' + '\t'.join(map(str, c)))

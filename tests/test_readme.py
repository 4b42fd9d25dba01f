"""The README's Python code runs, block after block, as a user would paste it."""

import os
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks():
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::pandas.errors.Pandas4Warning")
def test_readme_code_runs(tmp_path, capsys):
    blocks = python_blocks()
    assert len(blocks) >= 3
    namespace = {"__name__": "__readme__"}
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        for block in blocks:
            exec(compile(block, str(README), "exec"), namespace)
    finally:
        os.chdir(cwd)
    assert (tmp_path / "a9a.model").exists() and (tmp_path / "predictions").is_dir()
    clf = namespace["clf"]
    assert clf.duality_gap_ <= 1e-3
    # The larger-than-memory example streams several partitions, not one file read whole.
    assert namespace["df"].npartitions == 8 and len(list((tmp_path / "a9a_parquet").glob("*.parquet"))) == 8
    assert namespace["logit"].duality_gap_ <= 1e-6 and namespace["proba"].shape[1] == 2
    # The cluster block trains on its workers, by the method its comment names, to the same optimum.
    on_cluster = namespace["on_cluster"]
    assert on_cluster.history_[-1]["method"] == "newton" and on_cluster.duality_gap_ <= 1e-3
    assert abs(on_cluster.objective_ - clf.objective_) <= 1e-3 * clf.objective_

"""Without ``-n``, a command acts in the namespace kubectl would: the kubeconfig's current
context's (``default`` when it names none), or inside a pod, the pod's own."""

import argparse
from pathlib import Path
from typing import Any

import pytest
import yaml

from punctual.cli import namespaces
from punctual.kube import client

CLUSTER = {"name": "c", "cluster": {"server": "https://10.0.0.1:6443"}}
USER = {"name": "u", "user": {"token": "t"}}


def kubeconfig(current: str | None, **namespace_of_context: str | None) -> dict[str, Any]:
    contexts = [
        {
            "name": name,
            "context": {"cluster": "c", "user": "u"}
            | ({"namespace": namespace} if namespace is not None else {}),
        }
        for name, namespace in namespace_of_context.items()
    ]
    document: dict[str, Any] = {"apiVersion": "v1", "kind": "Config", "contexts": contexts}
    document |= {"clusters": [CLUSTER], "users": [USER]}
    return document | ({"current-context": current} if current is not None else {})


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home without a kubeconfig, outside any pod, and no $KUBECONFIG nor $POD_NAMESPACE."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("POD_NAMESPACE", raising=False)
    monkeypatch.setattr(client, "SERVICE_ACCOUNT_NAMESPACE", tmp_path / "no-such-pod")
    return tmp_path


def write(path: Path, document: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    return path


class TestWithAKubeconfig:
    @pytest.mark.parametrize(
        ("document", "expected"),
        [
            (kubeconfig("work", work="reports", play="games"), "reports"),
            (kubeconfig("play", work="reports", play="games"), "games"),
            (kubeconfig("work", work=None), "default"),
            (kubeconfig("work", work=""), "default"),
        ],
        ids=[
            "the current context's namespace",
            "another context's when it is current",
            "default when the context names none",
            "default when the context's namespace is empty",
        ],
    )
    def test_the_current_contexts_namespace_in_the_home_kubeconfig(
        self, home: Path, document: dict[str, Any], expected: str
    ) -> None:
        write(home / ".kube" / "config", document)

        assert client.current_namespace() == expected

    def test_kubeconfig_in_the_environment_comes_before_the_home_one(
        self, home: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        write(home / ".kube" / "config", kubeconfig("work", work="reports"))
        chosen = write(home / "other", kubeconfig("work", work="billing"))
        monkeypatch.setenv("KUBECONFIG", str(chosen))

        assert client.current_namespace() == "billing"

    def test_a_list_of_kubeconfigs_is_merged_skipping_missing_files(
        self, home: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        contexts = write(home / "contexts", kubeconfig(None, work="reports", play="games"))
        current = write(home / "current", {"current-context": "play"})
        listed = [home / "missing", current, contexts]
        monkeypatch.setenv("KUBECONFIG", ":".join(str(path) for path in listed))

        assert client.current_namespace() == "games"

    @pytest.mark.parametrize(
        "text",
        [
            "{not: yaml: at all\n",
            "current-context: gone\ncontexts: []\n",
            yaml.safe_dump(kubeconfig(None, work="reports")),
        ],
        ids=["no YAML", "its current context missing", "no current context"],
    )
    def test_an_unreadable_kubeconfig_is_an_error_naming_the_file(
        self, home: Path, monkeypatch: pytest.MonkeyPatch, text: str
    ) -> None:
        broken = home / "broken"
        broken.write_text(text, encoding="utf-8")
        monkeypatch.setenv("KUBECONFIG", str(broken))

        with pytest.raises(client.UnreadableKubeconfigError, match=str(broken)):
            client.current_namespace()


class TestInsideAPod:
    @pytest.mark.parametrize(
        ("pod_namespace", "namespace_file", "expected"),
        [
            (None, "reports\n", "reports"),
            ("billing", "reports\n", "billing"),
            (None, "", "default"),
            (None, None, "default"),
        ],
        ids=[
            "the service account's namespace file",
            "POD_NAMESPACE before the file",
            "default when the file is empty",
            "default outside a pod",
        ],
    )
    def test_without_a_kubeconfig_the_pods_own_namespace(
        self,
        home: Path,
        monkeypatch: pytest.MonkeyPatch,
        pod_namespace: str | None,
        namespace_file: str | None,
        expected: str,
    ) -> None:
        monkeypatch.setenv("KUBECONFIG", str(home / "missing"))
        if pod_namespace is not None:
            monkeypatch.setenv("POD_NAMESPACE", pod_namespace)
        if namespace_file is not None:
            (home / "namespace").write_text(namespace_file, encoding="utf-8")
            monkeypatch.setattr(client, "SERVICE_ACCOUNT_NAMESPACE", home / "namespace")

        assert client.current_namespace() == expected


class TestTheOption:
    @pytest.mark.parametrize(
        ("argv", "expected"),
        [(["nightly"], "reports"), (["nightly", "-n", "billing"], "billing")],
        ids=["absent: the current context's", "given: as given"],
    )
    def test_n_comes_before_the_kubeconfig(
        self, home: Path, argv: list[str], expected: str
    ) -> None:
        write(home / ".kube" / "config", kubeconfig("work", work="reports"))
        parser = argparse.ArgumentParser()
        parser.add_argument("name")
        namespaces.add_option(parser)

        assert namespaces.chosen(parser.parse_args(argv)) == expected

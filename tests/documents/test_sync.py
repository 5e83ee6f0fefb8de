from dashrag.documents.sync import FileState, plan_sync


def stored(sha, **extra):
    return {"path": "x", "file_type": "txt", "title": "", "modified": "2020-01-01T00:00:00Z", "sha256": sha, **extra}


def test_plan_sorts_files_into_added_changed_removed_and_unchanged():
    tree = {"same.txt": stored("1"), "edited.txt": stored("2"), "gone.txt": stored("3")}
    folder = {"same.txt": FileState("1", {}), "edited.txt": FileState("9", {}), "new.txt": FileState("4", {})}
    plan = plan_sync(tree, folder)
    assert (plan.added, plan.changed, plan.removed, plan.unchanged) == (
        ("new.txt",), ("edited.txt",), ("gone.txt",), ("same.txt",))
    assert plan.to_read == ("new.txt", "edited.txt")
    assert plan.counts() == {"added": 1, "changed": 1, "removed": 1, "unchanged": 1}


def test_a_changed_sidecar_line_changes_the_file():
    tree = {"a.txt": stored("1", year=2020)}
    assert plan_sync(tree, {"a.txt": FileState("1", {"year": 2021})}).changed == ("a.txt",)
    assert plan_sync(tree, {"a.txt": FileState("1", {"year": 2020})}).unchanged == ("a.txt",)


def test_documents_that_came_from_no_file_are_never_removed():
    tree = {"from-json": {"year": 2020}, "a.txt": stored("1")}
    plan = plan_sync(tree, {})
    assert plan.removed == ("a.txt",)


def test_a_document_without_a_recorded_hash_is_changed():
    tree = {"a.txt": {"path": "a.txt", "file_type": "txt"}}  # read before files' hashes were recorded
    assert plan_sync(tree, {"a.txt": FileState("1", {})}).changed == ("a.txt",)

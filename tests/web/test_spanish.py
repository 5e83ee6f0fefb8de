"""The page in Spanish: the help of every parameter, the labels of its choices, the page's own checks and
the server's refusals (issue 11: "every label, description and error has both")."""

from __future__ import annotations

from tests.web.test_page import SERVER_SAYS_VALID, choose, field, field_group


def in_spanish(page) -> None:
    page.get_by_label("Language").select_option(label="Español")
    page.get_by_role("button", name="Elegir el componente raíz").wait_for()


def test_spanish_shows_each_parameters_help_and_its_choices_labels(page):
    in_spanish(page)
    page.get_by_role("button", name="Elegir el componente raíz").click()
    choose(page, "AgenticRerankerRetriever")
    top_k = field_group(page, "", "top_k")
    assert "Cuántos devolver (top_k)" in top_k.locator("label").first.inner_text()
    assert "Cuántos fragmentos elige el modelo como máximo; a lo sumo k1." in top_k.inner_text()
    assert "por defecto: 5" in top_k.inner_text()
    slot = page.locator('section[data-path="params.children[0]"] > fieldset[data-field="children"]')
    assert "Recuperadores que se ejecutan lado a lado." in slot.locator("> p.help").inner_text()
    merge = field(page, "params.children[0]", "merge_strategy")
    assert merge.locator("option:checked").inner_text() == "Por turnos (round_robin)"
    assert "Fusión por rango recíproco (rrf)" in merge.locator("option").all_inner_texts()


def test_a_cross_field_rule_speaks_spanish_at_its_field(page):
    page.route("**/trees/validate", lambda route: route.fulfill(json=SERVER_SAYS_VALID))  # the page's own check
    in_spanish(page)
    page.get_by_role("button", name="Elegir el componente raíz").click()
    choose(page, "AgenticRerankerRetriever")
    field(page, "", "top_k").fill("20")
    field_group(page, "", "top_k").locator(".error-detail li", has_text="top_k (20) debe ser <= k1 (10)").wait_for()
    assert page.get_by_role("button", name="Construir el índice").is_disabled()


def test_a_rule_the_schema_states_speaks_spanish_at_the_field_it_needs(page):
    page.route("**/trees/validate", lambda route: route.fulfill(json=SERVER_SAYS_VALID))
    in_spanish(page)
    page.get_by_role("button", name="Elegir el componente raíz").click()
    choose(page, "RerankCascadeRetriever")
    field(page, "", "early_exit").select_option(label="Por encima de un umbral (threshold)")
    needed = field_group(page, "", "exit_threshold").locator(".error-detail li")
    needed.first.wait_for()
    assert needed.all_inner_texts() == ["early_exit threshold necesita exit_threshold"]


def test_a_refusal_of_the_server_is_worded_in_spanish_beside_its_own_detail(page, problems):
    problems.expect(422, "/trees")  # a corpus path that is not under the data root
    in_spanish(page)
    page.get_by_label("Preajustes").select_option("keyword")
    page.get_by_role("button", name="Cargar preajuste").click()
    page.get_by_text("El árbol es válido").wait_for()
    page.get_by_label("Ruta del corpus").fill("no-such-corpus")
    page.get_by_role("button", name="Construir el índice").click()
    refusal = page.locator(".index-panel .failure")
    refusal.wait_for()
    assert refusal.get_attribute("data-status") == "422"
    assert refusal.locator(".failure-summary").inner_text() == "El servidor rechazó la petición por no ser válida."
    assert refusal.locator(".server-detail").inner_text() == (
        "El servidor dice: corpus_path: 'no-such-corpus' is not a corpus under the data root")

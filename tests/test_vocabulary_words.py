"""A word read from a file or typed is turned into one of a vocabulary's words only if it is one."""

import pytest

from perdollar.vocabulary import MARKETS, checked_word


def test_a_known_word_comes_back_as_the_vocabulary_spells_it():
    assert checked_word("spot", MARKETS) == "spot"
    assert checked_word("on-demand", MARKETS) is MARKETS[0]


@pytest.mark.parametrize("word", ["Spot", "spot ", "committed-1y", ""])
def test_any_other_word_is_refused_naming_the_words_it_may_be(word):
    with pytest.raises(ValueError, match="is not one of on-demand, spot"):
        checked_word(word, MARKETS)

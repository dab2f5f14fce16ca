from pbmt.api import DEFAULT_MODEL as DEFAULT_MODEL
from pbmt.api import Bleu as Bleu
from pbmt.api import Explanation as Explanation
from pbmt.api import Model as Model
from pbmt.api import NBestTranslation as NBestTranslation
from pbmt.api import Translation as Translation
from pbmt.api import Tuning as Tuning
from pbmt.api import evaluate as evaluate
from pbmt.api import load as load

__version__: str
__all__: list[str]

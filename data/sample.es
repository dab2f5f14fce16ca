y aconteció después de la muerte de moisés siervo de jehová , que jehová habló á josué hijo de nun , ministro de moisés , diciendo :
mi siervo moisés es muerto : levántate pues ahora , y pasa este jordán , tú y todo este pueblo , á la tierra que yo les doy á los hijos de israel .
yo os he entregado , como lo había dicho á moisés , todo lugar que pisare la planta de vuestro pie .
desde el desierto y este líbano hasta el gran río eufrates , toda la tierra de los hetheos hasta la gran mar del poniente del sol , será vuestro término .
nadie te podrá hacer frente en todos los días de tu vida : como yo fuí con moisés , seré contigo ; no te dejaré , ni te desampararé .
esfuérzate y sé valiente : porque tú repartirás á este pueblo por heredad la tierra , de la cual juré á sus padres que la daría á ellos .
solamente te esfuerces , y seas muy valiente , para cuidar de hacer conforme á toda la ley que mi siervo moisés te mandó : no te apartes de ella ni á diestra ni á siniestra , para que seas prosperado en todas las cosas que emprendieres .
el libro de aquesta ley nunca se apartará de tu boca : antes de día y de noche meditarás en él , para que guardes y hagas conforme á todo lo que en él está escrito : porque entonces harás prosperar tu camino , y todo te saldrá bien .
mira que te mando que te esfuerces y seas valiente : no temas ni desmayes , porque jehová tu dios será contigo en donde quiera que fueres .
y josué mandó á los oficiales del pueblo , diciendo :
pasad por medio del campo , y mandad al pueblo , diciendo : preveníos de comida ; porque dentro de tres días pasaréis el jordán , para que entréis á poseer la tierra que jehová vuestro dios os da para que la poseáis .
también habló josué á los rubenitas y gaditas , y á la media tribu de manasés , diciendo :
acordaos de la palabra que moisés , siervo de jehová , os mandó diciendo : jehová vuestro dios os ha dado reposo , y os ha dado esta tierra .
vuestras mujeres y vuestros niños y vuestras bestias , quedarán en la tierra que moisés os ha dado de esta parte del jordán ; mas vosotros , todos los valientes y fuertes , pasaréis armados delante de vuestros hermanos , y les ayudaréis ;
hasta tanto que jehová haya dado reposo á vuestros hermanos como á vosotros , y que ellos también posean la tierra que jehová vuestro dios les da : y después volveréis vosotros á la tierra de vuestra herencia , la cual moisés siervo de jehová os ha dado , de esta parte del jordán hacia donde nace el sol ; y la poseeréis .
entonces respondieron á josué , diciendo : nosotros haremos todas las cosas que nos has mandado , é iremos adonde quiera que nos mandares .
de la manera que obedecimos á moisés en todas las cosas , así te obedeceremos á ti : solamente jehová tu dios sea contigo , como fué con moisés .
cualquiera que fuere rebelde á tu mandamiento , y no obedeciere á tus palabras en todas las cosas que le mandares , que muera ; solamente que te esfuerces , y seas valiente .
y josué , hijo de nun , envió desde sittim dos espías secretamente , diciéndoles : andad , reconoced la tierra , y á jericó . los cuales fueron , y entráronse en casa de una mujer ramera que se llamaba rahab , y posaron allí .
y fué dado aviso al rey de jericó , diciendo : he aquí que hombres de los hijos de israel han venido aquí esta noche á espiar la tierra .
entonces el rey de jericó envió á decir á rahab : saca fuera los hombres que han venido á ti , y han entrado en tu casa ; porque han venido á espiar toda la tierra .
mas la mujer había tomado los dos hombres , y los había escondido ; y dijo : verdad que hombres vinieron á mí , mas no supe de dónde eran :
y al cerrarse la puerta , siendo ya oscuro , esos hombres se salieron , y no sé á dónde se han ido : seguidlos apriesa , que los alcanzaréis .
mas ella los había hecho subir al terrado , y habíalos escondido entre tascos de lino que en aquel terrado tenía puestos .
y los hombres fueron tras ellos por el camino del jordán , hasta los vados : y la puerta fué cerrada después que salieron los que tras ellos iban .
mas antes que ellos durmiesen , ella subió á ellos al terrado , y díjoles :
sé que jehová os ha dado esta tierra ; porque el temor de vosotros ha caído sobre nosotros , y todos los moradores del país están desmayados por causa de vosotros ;
porque hemos oído que jehová hizo secar las aguas del mar bermejo delante de vosotros , cuando salisteis de egipto , y lo que habéis hecho á los dos reyes de los amorrheos que estaban de la parte allá del jordán , á sehón y á og , á los cuales habéis destruído .
oyendo esto , ha desmayado nuestro corazón ; ni ha quedado más espíritu en alguno por causa de vosotros : porque jehová vuestro dios es dios arriba en los cielos y abajo en la tierra .
ruégoos pues ahora , me juréis por jehová , que como he hecho misericordia con vosotros , así la haréis vosotros con la casa de mi padre , de lo cual me daréis una señal cierta ;
y que salvaréis la vida á mi padre y á mi madre , y á mis hermanos y hermanas , y á todo lo que es suyo ; y que libraréis nuestras vidas de la muerte .
y ellos le respondieron : nuestra alma por vosotros hasta la muerte , si no denunciareis este nuestro negocio : y cuando jehová nos hubiere dado la tierra , nosotros haremos contigo misericordia y verdad .
entonces ella los hizo descender con una cuerda por la ventana ; porque su casa estaba á la pared del muro , y ella vivía en el muro .
y díjoles : marchaos al monte , porque los que fueron tras vosotros no os encuentren ; y estad escondidos allí tres días , hasta que los que os siguen hayan vuelto ; y después os iréis vuestro camino .
y ellos le dijeron : nosotros seremos desobligados de este juramento con que nos has conjurado .
he aquí , cuando nosotros entráremos en la tierra , tú atarás este cordón de grana á la ventana por la cual nos descolgaste : y tú juntarás en tu casa tu padre y tu madre , tus hermanos y toda la familia de tu padre .
cualquiera que saliere fuera de las puertas de tu casa , su sangre será sobre su cabeza , y nosotros sin culpa . mas cualquiera que se estuviere en casa contigo , su sangre será sobre nuestra cabeza , si mano le tocare .
y si tú denunciares este nuestro negocio , nosotros seremos desobligados de este tu juramento con que nos has juramentado .
y ella respondió : sea así como habéis dicho . luego los despidió , y se fueron : y ella ató el cordón de grana á la ventana .
y caminando ellos , llegaron al monte , y estuvieron allí tres días , hasta que los que los seguían se hubiesen vuelto : y los que los siguieron , buscaron por todo el camino , mas no los hallaron .
y tornándose los dos varones , descendieron del monte , y pasaron , y vinieron á josué hijo de nun , y contáronle todas las cosas que les habían acontecido .
y dijeron á josué : jehová ha entregado toda la tierra en nuestras manos ; y también todos los moradores del país están desmayados delante de nosotros .
y levantóse josué de mañana , y partieron de sittim , y vinieron hasta el jordán , él y todos los hijos de israel , y reposaron allí antes que pasasen .
y pasados tres días , los oficiales atravesaron por medio del campo ,
y mandaron al pueblo , diciendo : cuando viereis el arca del pacto de jehová vuestro dios , y los sacerdotes y levitas que la llevan , vosotros partiréis de vuestro lugar , y marcharéis en pos de ella .
empero entre vosotros y ella haya distancia como de la medida de dos mil codos : y no os acercaréis á ella , á fin de que sepáis el camino por donde habéis de ir : por cuanto vosotros no habéis pasado antes de ahora por este camino .
y josué dijo al pueblo : santificaos , porque jehová hará mañana entre vosotros maravillas .
y habló josué á los sacerdotes , diciendo : tomad el arca del pacto , y pasad delante del pueblo . y ellos tomaron el arca del pacto , y fueron delante del pueblo .
entonces jehová dijo á josué : desde aqueste día comenzaré á hacerte grande delante de los ojos de todo israel , para que entiendan que como fuí con moisés , así seré contigo .
tú , pues , mandarás á los sacerdotes que llevan el arca del pacto , diciendo : cuando hubiereis entrado hasta el borde del agua del jordán , pararéis en el jordán .

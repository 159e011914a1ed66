"""Stop word lists of the analyzers: the default stop sets of Lucene's language analyzers.

Generated from Lucene 8.7 (lucene-analyzers-common; Polish from lucene-analyzers-stempel)
by ``<Language>Analyzer.getDefaultStopSet()``, i.e. the lists Elasticsearch calls
``_english_``, ``_german_``, ... Kept: entries that are one lowercase token of the
``words`` tokenizer. Dropped: comment lines that Lucene loads as words (Sorani, Galician,
Latvian) and entries with apostrophes, dots or hyphens, which no token can equal.
Licences: Lucene, Apache-2.0; the da de es fi fr hu it nl no pt ru sv lists are
Snowball's (BSD, snowballstem.org); English is Lucene's own 33-word list.
"""

# Each value is one string of space-separated words, split once at import.
_LISTS: dict[str, str] = {
    # ArabicAnalyzer, 119 words
    "ar": (
        "أ ألا أما أن أنت أنه أنها أو أى أي أيضا إذا إلا إلى إلي إما إن إنه إنها ا اذا الآن الا الان التى "
        "التي الذى الذي الذين الى الي اما ان انت انه انها او اى اي ايضا ب بأن بان بعد بعض به بها بين "
        "بينما تكون تلك ثم جميع حتى حيث خلال ذلك ضمن على عليه عليها عن عند عندما غير ف فأن فان فما فهو "
        "فهى فهي في فيه فيها قبل قد كان كانت كل كما لا لدى لك لكن لم لن له لها ما مع من منذ منه منها نحو "
        "هذا هذه هناك هو هى هي و وأن وإن وان وفي وكان وكانت وكل ولا ولم ولن وما ومن وهو وهى وهي يكون"
    ),
    # BulgarianAnalyzer, 190 words
    "bg": (
        "а аз ако ала бе без беше би бил била били било близо бъдат бъде бяха в вас ваш ваша вероятно "
        "вече взема ви вие винаги все всеки всички всичко всяка във въпреки върху г ги главно го д да "
        "дали до докато докога дори досега доста е едва един ето за зад заедно заради засега затова защо "
        "защото и из или им има имат иска й каза как каква какво както какъв като кога когато което които "
        "кой който колко която къде където към ли м ме между мен ми мнозина мога могат може моля момента "
        "му н на над назад най направи напред например нас не него нея ни ние никой нито но някои някой "
        "няма обаче около освен особено от отгоре отново още пак по повече повечето под поне поради после "
        "почти прави пред преди през при пък първо с са само се сега си скоро след сме според сред срещу "
        "сте съм със също т тази така такива такъв там твой те тези ти тн то това тогава този той толкова "
        "точно трябва тук тъй тя тях у харесва ч че често чрез ще щом я"
    ),
    # BengaliAnalyzer, 116 words
    "bn": (
        "অনেক অন্য অবশ্য আগে আছে আজ আবার আমরা আমাদের আর ই উত্তর উপর উপরে এ এই এক্ এখন এত এব এমন এমনি এর "
        "এস এসে ও ওই কমনে করা করে কাছে কাজ কাজে কারণ কি কিছু কে কেউ কেখা কেন কোটি কোনো কয়েক খুব গিয়ে গেল "
        "চার চালু চেষ্টা ছিল জানা জ্নজন টি তখন তবে তা তাই তো থাকা থেকে দিন দু দুই দেওয়া ধামার নতুন না "
        "নাগাদ নিয়ে নেওয়া নয় পর পরে পাচ পি পেয়্র্ প্রতি প্রথম প্রযন্ত প্রাথমিক প্রায় বক্তব্য বন বলা বলে "
        "বলেন বহু বা বি বিভিন্ন বেশ বেশি মতো মধ্যে মনে যখন যদি যা যাওয়া যে র রকম লক্ষ শুধু শুরু সঙ্গে সব "
        "সহ সাধারণ সামনে সি সে সেই হতে হাজার হয়"
    ),
    # CatalanAnalyzer, 204 words
    "ca": (
        "a abans ací ah així això al aleshores algun alguna algunes alguns alhora allà allí allò als "
        "altra altre altres amb ambdues ambdós apa aquell aquella aquelles aquells aquest aquesta "
        "aquestes aquests aquí baix cada cadascuna cadascunes cadascuns cadascú com contra dalt de del "
        "dels des després dins dintre donat doncs durant e eh el els em en encara ens entre eren es esta "
        "estaven esteu està estàvem estàveu et etc ets fins fora gairebé ha han has havia he hem heu hi "
        "ho i igual iguals ja la les li llavors ma mal malgrat mateix mateixa mateixes mateixos me mentre "
        "meu meus meva meves molt molta moltes molts mon mons més ne ni no nogensmenys només nosaltres "
        "nostra nostre nostres o oh oi on pas pel pels per perquè però poc poca pocs poques potser propi "
        "qual quals quan quant que quelcom qui quin quina quines quins què sa semblant semblants ses seu "
        "seus seva seves si sobre sobretot solament sols son sons sota sou sóc són ta tal també tampoc "
        "tan tant tanta tantes teu teus teva teves ton tons tot tota totes tots un una unes uns us va "
        "vaig vam van vas veu vosaltres vostra vostre vostres érem éreu és"
    ),
    # SoraniAnalyzer, 62 words
    "ckb": (
        "ئێمە ئێوە ئەم ئەو ئەوان ئەوەی بۆ بێ بێجگە بە بەبێ بەدەم بەردەم بەرلە بەرەوی بەرەوە بەلای بەپێی "
        "تۆ تێ جگە دوای دوو دە دەکات دەگەڵ سەر لێ لە لەبابەت لەباتی لەبارەی لەبرێتی لەبن لەبەر لەبەینی "
        "لەدەم لەرێ لەرێگا لەرەوی لەسەر لەلایەن لەناو لەنێو لەو لەپێناوی لەژێر لەگەڵ من ناو نێوان هەر "
        "هەروەها و وەک پاش پێ پێش چەند کرد کە ی"
    ),
    # CzechAnalyzer, 171 words
    "cs": (
        "a aby aj ale ani asi atd atp až bez bude budem budeš by byl byla byli bylo být co což cz další "
        "dnes do ho i jak jakmile jako jakož je jeho jehož jej jejich její jelikož jemu jen ještě jež ji "
        "jiné již jsem jseš jsme jsou jste já jí jíž k kam kde kdo když ke kterou která které který kteří "
        "mezi mi mne my má máte mít mě můj může na nad napište načež naši nebo neg nejsou není než nic "
        "nové nový nám nás němu němuž o od on ona oni ono ony pak po pod podle pokud pouze pravé pro "
        "proto protože proč první pta před přes při přičemž re s se si strana své svých svým svými ta tak "
        "také takže tato tedy ten tento teto tipy to tohle toho tohoto tom tomto tomu tomuto tu tuto ty "
        "tyto téma tím tímto těm těmu u už v vaše ve vy vám vás více však z za zda zde ze zprávy zpět či "
        "článku články"
    ),
    # DanishAnalyzer, 94 words
    "da": (
        "ad af alle alt anden at blev blive bliver da de dem den denne der deres det dette dig din disse "
        "dog du efter eller en end er et for fra ham han hans har havde have hende hendes her hos hun "
        "hvad hvis hvor i ikke ind jeg jer jo kunne man mange med meget men mig min mine mit mod ned "
        "noget nogle nu når og også om op os over på selv sig sin sine sit skal skulle som sådan thi til "
        "ud under var vi vil ville vor være været"
    ),
    # GermanAnalyzer, 231 words
    "de": (
        "aber alle allem allen aller alles als also am an ander andere anderem anderen anderer anderes "
        "anderm andern anderr anders auch auf aus bei bin bis bist da damit dann das dasselbe dazu daß "
        "dein deine deinem deinen deiner deines dem demselben den denn denselben der derer derselbe "
        "derselben des desselben dessen dich die dies diese dieselbe dieselben diesem diesen dieser "
        "dieses dir doch dort du durch ein eine einem einen einer eines einig einige einigem einigen "
        "einiger einiges einmal er es etwas euch euer eure eurem euren eurer eures für gegen gewesen hab "
        "habe haben hat hatte hatten hier hin hinter ich ihm ihn ihnen ihr ihre ihrem ihren ihrer ihres "
        "im in indem ins ist jede jedem jeden jeder jedes jene jenem jenen jener jenes jetzt kann kein "
        "keine keinem keinen keiner keines können könnte machen man manche manchem manchen mancher "
        "manches mein meine meinem meinen meiner meines mich mir mit muss musste nach nicht nichts noch "
        "nun nur ob oder ohne sehr sein seine seinem seinen seiner seines selbst sich sie sind so solche "
        "solchem solchen solcher solches soll sollte sondern sonst um und uns unse unsem unsen unser "
        "unses unter viel vom von vor war waren warst was weg weil weiter welche welchem welchen welcher "
        "welches wenn werde werden wie wieder will wir wird wirst wo wollen wollte während würde würden "
        "zu zum zur zwar zwischen über"
    ),
    # GreekAnalyzer, 75 words
    "el": (
        "αλλα αν αντι απο αυτα αυτεσ αυτη αυτο αυτοι αυτοσ αυτουσ αυτων για δε δεν εαν ειμαι ειμαστε "
        "ειναι εισαι ειστε εκεινα εκεινεσ εκεινη εκεινο εκεινοι εκεινοσ εκεινουσ εκεινων ενω επι η θα "
        "ισωσ κ και κατα κι μα με μετα μη μην να ο οι ομωσ οπωσ οσο οτι παρα ποια ποιεσ ποιο ποιοι ποιοσ "
        "ποιουσ ποιων που προσ πωσ σε στη στην στο στον τα την τησ το τον τοτε του των ωσ"
    ),
    # EnglishAnalyzer, 33 words
    "en": (
        "a an and are as at be but by for if in into is it no not of on or such that the their then there "
        "these they this to was will with"
    ),
    # SpanishAnalyzer, 308 words
    "es": (
        "a al algo algunas algunos ante antes como con contra cual cuando de del desde donde durante e el "
        "ella ellas ellos en entre era erais eran eras eres es esa esas ese eso esos esta estaba estabais "
        "estaban estabas estad estada estadas estado estados estamos estando estar estaremos estará "
        "estarán estarás estaré estaréis estaría estaríais estaríamos estarían estarías estas este "
        "estemos esto estos estoy estuve estuviera estuvierais estuvieran estuvieras estuvieron estuviese "
        "estuvieseis estuviesen estuvieses estuvimos estuviste estuvisteis estuviéramos estuviésemos "
        "estuvo está estábamos estáis están estás esté estéis estén estés fue fuera fuerais fueran fueras "
        "fueron fuese fueseis fuesen fueses fui fuimos fuiste fuisteis fuéramos fuésemos ha habida "
        "habidas habido habidos habiendo habremos habrá habrán habrás habré habréis habría habríais "
        "habríamos habrían habrías habéis había habíais habíamos habían habías han has hasta hay haya "
        "hayamos hayan hayas hayáis he hemos hube hubiera hubierais hubieran hubieras hubieron hubiese "
        "hubieseis hubiesen hubieses hubimos hubiste hubisteis hubiéramos hubiésemos hubo la las le les "
        "lo los me mi mis mucho muchos muy más mí mía mías mío míos nada ni no nos nosotras nosotros "
        "nuestra nuestras nuestro nuestros o os otra otras otro otros para pero poco por porque que quien "
        "quienes qué se sea seamos sean seas seremos será serán serás seré seréis sería seríais seríamos "
        "serían serías seáis sido siendo sin sobre sois somos son soy su sus suya suyas suyo suyos sí "
        "también tanto te tendremos tendrá tendrán tendrás tendré tendréis tendría tendríais tendríamos "
        "tendrían tendrías tened tenemos tenga tengamos tengan tengas tengo tengáis tenida tenidas tenido "
        "tenidos teniendo tenéis tenía teníais teníamos tenían tenías ti tiene tienen tienes todo todos "
        "tu tus tuve tuviera tuvierais tuvieran tuvieras tuvieron tuviese tuvieseis tuviesen tuvieses "
        "tuvimos tuviste tuvisteis tuviéramos tuviésemos tuvo tuya tuyas tuyo tuyos tú un una uno unos "
        "vosotras vosotros vuestra vuestras vuestro vuestros y ya yo él éramos"
    ),
    # EstonianAnalyzer, 1362 words
    "et": (
        "a aa abil adaa adjöö ae aegu aegus aga ah ahaa ahah ahoi ai aidaa aih aijeh aina ainult aituma "
        "aitäh aitüma alalt alates alati alguks algul algule algult alguni all alla allapoole alles "
        "allpool alt altpoolt alul alutsi ammuu amps ampsti aptsih arvel asemel asemele ass at ata atsih "
        "atsihh auh b bingo braavo brr c d e eales ealeski edasi edaspidi ee eeh eel eeli eelkõige "
        "eelmine eemal ees eesotsas eespool eest eestotsast ega eh ehee eheh ehei ehh ehhee ehk ehkki ei "
        "eikeegi eimiski einoh eks elik ellik ena enam end enda enese enge enim enne ennegu ennem ennäe "
        "ennäh ent esialgu esitsi et ette etteotsa f fuh fui fuih g h haa haaval hah hahaa hakkama "
        "halleluuja hallo halloo hass heaks hee heh hei heureka hihii hmh hmjah hohoo hoi hollallaa "
        "hommikupoole hoo hoolimata hoopis hoplaa hopp hops hopsassaa hopsti hosianna huh huidii huist "
        "hulgas hulgast hulka hurjah hurjeh hurjoh hurjuh hurraa huu häh hõhõh hõi hõissa hõissassa hõk "
        "hõkk hüvasti i iga iganes igasugune igatahes igati igaüks iial iialgi ikka ikkagi ilma ilmaski "
        "ise iseenda iseenese iseenesest isegi isesugune issake issakene isver j ja jaah jah jalgu jalus "
        "jalust janäe jaoks jeeh jeerum jeever jessas jestas jooksul ju juba juhhei juhul jumalaga "
        "jumalime jumaluke jumalukene just justkui jutas juurde juures juurest jälil jälile järel järele "
        "järelikult järelt järgi järgmine k ka kaaps kaapsti kaasas kaasike kae kah kallal kallale "
        "kallalt kalps kalpsti kamul kannul kannule kannult kannäe kanäe kappadi kaps kapsti karkäuh "
        "karkääks karkääksti karkõmm karmauh karmauhti karnaps karnapsti karniuhti karpartsaki karpauh "
        "karpauhti karplauh karplauhti karprauh karprauhti karsumdi karsumm kartsumdi kartsumm karviuh "
        "karviuhti kas kaske kassa kasvõi kaudu kauh kauhti kaupa keda keegi keh keksti kepsti kes keset "
        "kesk keskel keskele keskelt keskis keskpaiku kestahes kestel kestes khe khm kih kiiks kiiksti "
        "kiis kiiss kikerii kikerikii kilda kili kilk kilks kill killadi killas killast kimpu kimpus kipp "
        "kiriküüt kirts kiuste klaps klapsti klirdi klirr klonks klops klopsti kluk kläu klõks klõksti "
        "klõmdi klõmm klõmpsti klõnks klõnksti klõps klõpsti kogu koguni kohal kohale kohalt kohaselt "
        "kohati kohe kohta kok kokku koks koksti kolaki kolk kolks kolksti koll kolladi komp komps "
        "kompsti koos kop kopp koppadi kops kopsti korral kossu kotsu kraa kraak kraaks kraaps kraapsti "
        "krahh kraks kraksti kraps krapsti krauh krauhti kriiks kriiksti kriips kriuh kriuks kriuksti "
        "kromps kronk kronks krooks kruu kräu kräuh kräuhti kräuks krõks krõksti krõpa krõps krõpsti "
        "krõuh kss kuhu kuhugi kuhupoole kui kuid kuidagi kuidas kuigi kuivõrd kukeleegu kukil kukile "
        "kukilt kukku kuku kulu kulul kumb kumbki kuna kunagi kuni kurluu kurnäu kus kusagil kusjuures "
        "kuskil kuspool kuss kussu kust kustpoolt kut käekõrval käekõrvale käekõrvalt käes käest kärr "
        "kärts kärtsti käsikäes kätte käuks käuksti kääga kääks kääksti kõige kõigepealt kõik kõks kõksti "
        "kõldi kõlks kõlksti kõll kõmaki kõmdi kõmm kõmps kõpp kõps kõpsadi kõpsat kõpsti kõrr kõrva "
        "kõrval kõrvale kõrvalt kõrvas kõrvast kõss kõtt kõõksti köh köksti külge küljes küljest küll "
        "küüsi küüsis küüsist l laks laksti lampsti lappi larts lartsti lats latsti leelo legoo lehva "
        "ligi ligidal ligidale ligidalt liiga limpsti lips lipsti lirts lirtsaki lirtsti lisaks lonksti "
        "lool lops lopsti lorts lortsti luks lups lupsti lurts lurtsti läbi lähedal lähedale lähedalt "
        "lärts lärtsti läts lätsti lõks lõksti lõmps lõmpsti lõnks lõnksti lörts lörtsti lötsti lööps "
        "lööpsti m man mant manu marss mats matsti mauh mauhti meelest meiesugune meietaoline mh mhh mhmh "
        "miau midagi mihuke mihukene miks mil millal millalgi milletaoline milline mina minake minema "
        "mingi mingisugune minusugune minutaoline mis miski miskisugune mispärast missugune mistab "
        "mistahes mistõttu misuke mitmes mitmesugune mitte mitu mjaa mkm mnjaa mnjah moens muide muidu "
        "muidugi muist mujal mujale mujalt mulks mulksti muu muudkui muuh mäh mäherdune mäts mäu mää "
        "määrane mõh mõlema mõlemad mõmm mõnda mõne mõnesugune mõni mõnikord mõningane mõningas möh möö "
        "mööda mühüh müks müksti müraki mürr mürts mürtsaki mürtsti mütaku müts mütsti mütt n naa naah "
        "naasugune nagu nah nahas nahka nahkas najal najale najalt naks naksti nanuu naps napsti need "
        "nemad nendesugune nendetaoline nigu nihuke nihukene nii niikaua niimitu niimoodi niipaljuke "
        "niisama niisamasugune niisiis niisugune niivõrd nilpsti ning nipsti nirr nisuke nisukene niuh "
        "niuhti noh noksti nolpsti nonoh nonoo nonäh noo nooh nooks norr nurr nuuts näeh näh nälpsti "
        "näpsti näts nätsti näu näuh näuhti näuks näuksti nääh nääks nõh nõhh nõjal nõjale nõks nõksti "
        "nõnda nõõ nõõh nüüd o oeh oh ohh ohhh ohoh ohoi ohoo oi oih oijee oijeh olema olgugi oma "
        "omaenese omaette omakorda omasugune omataoline omavahel ometi oo ooh oot ossa ot otsa otsas "
        "otsast otsekui otsenagu p paa pah pahh paigale paigu paiku paitsi pakaa palju paljuke pamm "
        "pantsti pardon pardonks parlartsti parts partsti partsumdi partsumm pastoi pats patst patsti pau "
        "pauh pauhti peaaegu peagi peal peale pealepoole pealpool pealt pealtpoolt peamiselt pele perra "
        "perrä pfui phuh phuuh phäh phähh pidama pidi pigem pihta piiks piip piki pikku piku pikuti pimm "
        "piraki pisut piuks plaks plaksti plarts plartsti plats platsti plauh plauhh plauhti pliks plinn "
        "pliraki plirts plirtsti pliu pliuh ploks plotsti plumps plumpsti plärr plärts plärtsat plärtsti "
        "pläu pläuh plää plõks plõksti plõmdi plõmm plõnn plörtsat pomm pool poole poolest poolt popp "
        "pops popsti ports pot pots potsti pott praegu praegune praks praksti prants prantsaki prantsti "
        "prassai prauh prauhh prauhti priks priuh priuhh proosit proost prr prrr prääk prääks prõks "
        "prõksti prõmdi prõmm prõntsti psst pst ptrr ptruu ptüi puh puhh puhul puksiiris puksti pumm "
        "pumps purts puuh päh pähe pähh päntsti päralt päras pärast päri päris pää põiki põks põksti "
        "põmdi põmm põmmadi põnks põnn põnnadi põnt põnts põntsti põraki põrr pöörd püh r raks raksti "
        "raps rapsti ratataa rauh riips riipsti riks ringi ringis risti risust rivitult robaki rohkem "
        "rops ropsaki ropsti ruik räntsti räts röh röhh s saadetusel saadik saama saatel saati sah sahh "
        "sahkat sama samas samasugune samataoline samuti saps sapsti sauh sauhti seal sealpool sealt "
        "sealtpoolt seas seast sedakorda sedapuhku see seega seejuures seejärel seekord seepärast sees "
        "seesama seesamane seesamune seesinane seespool seest seesugune seetõttu sekka seljataga "
        "sellepärast selline selmet seltsi seltsis seltsist seni servus sest sestab sestap sihuke "
        "sihukene siia siiani siiapoole siin siinkohal siinpool siis siiski siit siitpoolt silks sina "
        "sinna sinnapoole sinusugune sinutaoline sips sipsti sirr sirts sirtsti sisse sissepoole siu siuh "
        "siuhti siuke siukene siuks siuts skool slepis so soh solks solksti solpsti soo sooh sopp sops "
        "sopsti sorr sorts sortsti soss ss sss sst stopp suht suhtes sulk sulks sulksti sull sulps "
        "sulpsti sumaki sumdi summ sups supsaku supsti surts surtsti suss susti suts sutsti säh säherdune "
        "sähke särts särtsti säu säuh säuhti säärane t taevake taevakene taga tagant tagantotsast "
        "tagantpoolt tagaotsas tagapidi tagapool tagaselja tagasi tagast tagutsi taha tahaotsa tahapoole "
        "takk takka taoline tarvis tasa teel tegema teiesugune teine teineteise teispool teispoole "
        "teistsugune tema temake temakene temasugune temataoline tere terekest tiks tilk tilks till "
        "tilulii tinn tip tirr tirtsti tiu tjaa tjah tohhoh tohhoo tohoh tohoo tok tokk toks toksti tonks "
        "tonksti too toosama toosamane tota totsti tprr tpruu trah trahh trallallaa trill trillallaa trr "
        "trrr tsah tsahh tsilk tsirr tsiuh tskae tsolk tss tsst tst tsuhh tsuk tsumm tsurr tsäuh tuk tuks "
        "tulema turts turtsti tutki tutkit tutulutu tuuri tuuris tuut täiesti tänu tõesti tõks tõttu "
        "tötsti tükkis tümps tšao tšš tššš u uh uhal uhh uhtsa uhtsaa uhuh uhuu ui uih uijah uijeh uist "
        "uit uka umbes upsti uraa urjah urjeh urjoh urjuh urr urraa ust utu uu uuh v vaak vaat vaatamata "
        "vae vaeh vahel vahele vahelt vahepeal vahepeale vahepealt vahetsi vai vaid varal varale varul "
        "vastas vastast vastu vat vau veel veelgi veerde veeres vhüüt vidiit viiks viisi vilks vilksti "
        "virdi virr vist viu viudi viuh viuhti voeh voh vohh volks volksti vooh vops vopsti vot vuh vuhti "
        "vuih vulks vulksti vull vulpsti vups vupsaki vupsaku vupsti vurdi vurr vurts vurtsti vutt väel "
        "väele väga vähemalt välja väljapoole väljas väljaspool väljast väljastpoolt vältel vääks väärt "
        "väärtki võe võeh või võibolla võidu võih võima võrd võrdki võrr võrra võrragi võts võtt w x y z "
        "ä äh ähh ähhähhää äiu ära äss ää ääh äähh äärde ääre ääres äärest õ õe õhtupoole õits õk õkk õrr "
        "õss õuh ö öh öhh ök ü üh ühes ühestükis ühestükkis ühtlasi üks üksi ükskõik üksteise ülal ülale "
        "ülalpool ülalt ülaltpoolt üle üles ülespoole ülesse üleval ülevalpool ülevalt ülevaltpoolt "
        "ülimalt ümber ümbert üsna š šlepis ž"
    ),
    # BasqueAnalyzer, 98 words
    "eu": (
        "al anitz arabera asko baina bat batean batek bati batzuei batzuek batzuetan batzuk bera beraiek "
        "berau berauek bere berori beroriek beste bezala da dago dira ditu du dute edo egin ere eta eurak "
        "ez gainera gu gutxi guzti haiei haiek haietan hainbeste hala han handik hango hara hari hark "
        "hartan hau hauei hauek hauetan hemen hemendik hemengo hi hona honek honela honetan honi hor hori "
        "horiei horiek horietan horko horra horrek horrela horretan horri hortik hura izan ni noiz nola "
        "non nondik nongo nor nora ze zein zen zenbait zenbat zer zergatik ziren zituen zu zuek zuen "
        "zuten"
    ),
    # PersianAnalyzer, 308 words
    "fa": (
        "اباد اثر اره اري از است استفاده اش اكنون البته ام اما امد امده امروز امسال ان انان انجا اند انكه "
        "انها انچه او اورد اورده اول اي ايا ايد ايشان ايم اين اينكه اگر با بار باره باشد باشند باشيم بالا "
        "بالاي بايد بدون بر برابر براساس براي برخوردار برخي برداري بروز بسيار بسياري بعد بعري بعضي بلكه "
        "بله بلي بنابراين بندي به بهترين بود بودن بودند بوده بي بيرون بيست بيش بيشتر بيشتري بين تا تازه "
        "تاكنون تان تحت تر ترين تمام تمامي تنها تواند توانند توسط تول توي جا جاي جايي جدا جديد جريان جز "
        "جلوي جلوگيري حتي حدود حق خارج خدمات خواست خواهد خواهند خواهيم خود خويش خياه داد دادن دادند داده "
        "دارد دارند داريم داشت داشتن داشتند داشته دانست دانند در درباره دنبال ده دهد دهند دو دوم ديده "
        "ديروز ديگر ديگران ديگري را راه رفت رفته روب روزهاي روي ريزي زياد زير زيرا سابق ساخته سازي سراسر "
        "سري سعي سمت سوم سوي سپس شان شايد شد شدن شدند شده شش شما شناسي شود شوند صورت ضد ضمن طبق طريق طور "
        "طي عقب علت عنوان غير فقط فكر فوق قابل قبل قصد كجا كجاست كدام كرد كردم كردن كردند كرده كس كسي كل "
        "كمتر كنار كند كنم كنند كنيد كنيم كه كي لطفا ما مان مانند مثل مختلف مدتي مردم مرسي مقابل من مورد "
        "مي ميليارد ميليون مگر ناشي نام نبايد نبود نخست نخستين نخواهد ندارد ندارند نداشته نزد نزديك نشان "
        "نشده نظير نكرده نمايد نمي نه نوعي نيز نيست ه ها هاي هايي هر هرگز هزار هست هستند هستيم هفت هم "
        "همان همه همواره همين همچنان همچنين همچون هنوز هنگام هنگامي هيچ و وسط وقتي وقتيكه ولي وي وگو يا "
        "يابد يك يكديگر يكي پاعين پس پنج پيش چرا چطور چند چندين چنين چه چهار چون چيز چيزي چيست چگونه "
        "گذاري گذاشته گردد گرفت گرفته گروهي گفت گفته گويد گويند گيرد گيري"
    ),
    # FinnishAnalyzer, 229 words
    "fi": (
        "ei eivät emme en et ette että he heidän heidät heihin heille heillä heiltä heissä heistä heitä "
        "hän häneen hänelle hänellä häneltä hänen hänessä hänestä hänet häntä itse ja johon joiden joihin "
        "joiksi joilla joille joilta joina joissa joista joita joka joksi jolla jolle jolta jona jonka "
        "jos jossa josta jota jotka kanssa keiden keihin keiksi keille keillä keiltä keinä keissä keistä "
        "keitä keneen keneksi kenelle kenellä keneltä kenen kenenä kenessä kenestä kenet ketkä ketä koska "
        "kuin kuka kun me meidän meidät meihin meille meillä meiltä meissä meistä meitä mihin miksi mikä "
        "mille millä miltä minkä minua minulla minulle minulta minun minussa minusta minut minuun minä "
        "missä mistä mitkä mitä mukaan mutta ne niiden niihin niiksi niille niillä niiltä niin niinä "
        "niissä niistä niitä noiden noihin noiksi noilla noille noilta noin noina noissa noista noita nuo "
        "nyt näiden näihin näiksi näille näillä näiltä näinä näissä näistä näitä nämä ole olemme olen "
        "olet olette oli olimme olin olisi olisimme olisin olisit olisitte olisivat olit olitte olivat "
        "olla olleet ollut on ovat poikki se sekä sen siihen siinä siitä siksi sille sillä siltä sinua "
        "sinulla sinulle sinulta sinun sinussa sinusta sinut sinuun sinä sitä tai tallä te teidän teidät "
        "teihin teille teillä teiltä teissä teistä teitä tuo tuohon tuoksi tuolla tuolle tuolta tuon "
        "tuona tuossa tuosta tuotä tähän täksi tälle tältä tämä tämän tänä tässä tästä tätä vaan vai "
        "vaikka yli"
    ),
    # FrenchAnalyzer, 164 words
    "fr": (
        "ai aie aient aies ait as au aura aurai auraient aurais aurait auras aurez auriez aurions aurons "
        "auront aux avaient avais avait avec avez aviez avions avons ayant ayez ayons c ce ceci cela celà "
        "ces cet cette d dans de des du elle en es est et eu eue eues eurent eus eusse eussent eusses "
        "eussiez eussions eut eux eûmes eût eûtes furent fus fusse fussent fusses fussiez fussions fut "
        "fûmes fût fûtes ici il ils j je l la le les leur leurs lui m ma mais me mes moi mon même n ne "
        "nos notre nous on ont ou par pas pour qu que quel quelle quelles quels qui s sa sans se sera "
        "serai seraient serais serait seras serez seriez serions serons seront ses soi soient sois soit "
        "sommes son sont soyez soyons suis sur t ta te tes toi ton tu un une vos votre vous y à étaient "
        "étais était étant étiez étions été étée étées étés êtes"
    ),
    # IrishAnalyzer, 106 words
    "ga": (
        "a ach ag agus an aon ar arna as ba beirt bhúr caoga ceathair ceathrar chomh chtó chuig chun cois "
        "céad cúig cúigear daichead dar de deich deichniúr den dhá do don dtí dá dár dó faoi faoin faoina "
        "faoinár fara fiche gach gan go gur haon hocht i iad idir in ina ins inár is le leis lena lenár "
        "mar mo mé na nach naoi naonúr ná ní níor nó nócha ocht ochtar os roimh sa seacht seachtar "
        "seachtó seasca seisear siad sibh sinn sna sé sí tar thar thú triúr trí trína trínár tríocha tú "
        "um ár é éis í ó ón óna ónár"
    ),
    # GalicianAnalyzer, 160 words
    "gl": (
        "a alí ao aos aquel aquela aquelas aqueles aquilo aquí as así aínda ben cando che co coa coas "
        "comigo con connosco contigo convosco cos cun cunha cunhas cuns da dalgunha dalgunhas dalgún "
        "dalgúns das de del dela delas deles desde deste do dos dun dunha dunhas duns e el ela elas eles "
        "en era eran esa esas ese eses esta estaba estar este estes estiven estou está están eu facer foi "
        "foron fun había hai iso isto la las lle lles lo los mais me meu meus min miña miñas moi na nas "
        "neste nin no non nos nosa nosas noso nosos nun nunha nunhas nuns nós o os ou para pero pode pois "
        "pola polas polo polos por que se senón ser seu seus sexa sido sobre súa súas tamén tan te ten "
        "ter teu teus teñen teño ti tido tiven tiña túa túas un unha unhas uns vos vosa vosas voso vosos "
        "vós á é ó ós"
    ),
    # HindiAnalyzer, 225 words
    "hi": (
        "अंदर अत अदि अप अपना अपनि अपनी अपने अभि अभी आदि आप इंहिं इंहें इंहों इतयादि इत्यादि इन इनका "
        "इन्हीं इन्हें इन्हों इस इसका इसकि इसकी इसके इसमें इसि इसी इसे उंहिं उंहें उंहों उन उनका उनकि "
        "उनकी उनके उनको उन्हीं उन्हें उन्हों उस उसके उसि उसी उसे एक एवं एस एसे ऐसे ओर और कइ कई कर करता "
        "करते करना करने करें कहते कहा का काफि काफ़ी कि किंहें किंहों कितना किन्हें किन्हों किया किर किस "
        "किसि किसी किसे की कुछ कुल के को कोइ कोई कोन कोनसा कौन कौनसा गया घर जब जहाँ जहां जा जिंहें जिंहों "
        "जितना जिधर जिन जिन्हें जिन्हों जिस जिसे जीधर जेसा जेसे जैसा जैसे जो तक तब तरह तिंहें तिंहों तिन "
        "तिन्हें तिन्हों तिस तिसे तो था थि थी थे दबारा दवारा दिया दुसरा दुसरे दूसरे दो द्वारा न नहिं नहीं "
        "ना निचे निहायत नीचे ने पर पहले पुरा पूरा पे फिर बनि बनी बहि बही बहुत बाद बाला बिलकुल भि भितर भी "
        "भीतर मगर मानो मे में यदि यह यहाँ यहां यहि यही या यिह ये रखें रवासा रहा रहे ऱ्वासा लिए लिये लेकिन "
        "व वगेरह वरग वर्ग वह वहाँ वहां वहिं वहीं वाले वुह वे वग़ैरह संग सकता सकते सबसे सभि सभी साथ साबुत "
        "साभ सारा से सो हि ही हुअ हुआ हुइ हुई हुए हे हें है हैं हो होता होति होती होते होना होने"
    ),
    # HungarianAnalyzer, 197 words
    "hu": (
        "a abban ahhoz ahogy ahol aki akik akkor alatt amely amelyek amelyekben amelyeket amelyet "
        "amelynek ami amikor amit amolyan amíg annak arra arról az azok azon azonban azt aztán azután "
        "azzal azért be belül benne bár cikk cikkek cikkeket csak de e ebben eddig egy egyes egyetlen "
        "egyik egyre egyéb egész ehhez ekkor el ellen első elég elő először előtt emilyen ennek erre ez "
        "ezek ezen ezt ezzel ezért fel felé hanem hiszen hogy hogyan igen ill illetve ilyen ilyenkor "
        "ismét ison itt jobban jó jól kell kellett keressünk keresztül ki kívül között közül legalább "
        "legyen lehet lehetett lenne lenni lesz lett maga magát majd meg mellett mely melyek mert mi "
        "mikor milyen minden mindenki mindent mindig mint mintha mit mivel miért most már más másik még "
        "míg nagy nagyobb nagyon ne nekem neki nem nincs néha néhány nélkül olyan ott pedig persze rá s "
        "saját sem semmi sok sokat sokkal szemben szerint szinte számára talán tehát teljes tovább "
        "továbbá több ugyanis utolsó után utána vagy vagyis vagyok valaki valami valamint való van vannak "
        "vele vissza viszont volna volt voltak voltam voltunk által általában át én éppen és így össze "
        "úgy új újabb újra ő ők őket"
    ),
    # ArmenianAnalyzer, 45 words
    "hy": (
        "այդ այլ այն այս դու դուք եմ են ենք ես եք է էի էին էինք էիր էիք էր ըստ թ ի ին իսկ իր կամ համար "
        "հետ հետո մենք մեջ մի ն նա նաև նրա նրանք որ որը որոնք որպես ու ում պիտի վրա և"
    ),
    # IndonesianAnalyzer, 355 words
    "id": (
        "ada adalah adanya adapun agak agaknya agar akan akankah akhirnya aku akulah amat amatlah anda "
        "andalah antar antara antaranya apa apaan apabila apakah apalagi apatah atau ataukah ataupun "
        "bagai bagaikan bagaimana bagaimanakah bagaimanapun bagi bahkan bahwa bahwasanya banyak beberapa "
        "begini beginian beginikah beginilah begitu begitukah begitulah begitupun belum belumlah berapa "
        "berapakah berapalah berapapun bermacam bersama betulkah biasa biasanya bila bilakah bisa bisakah "
        "boleh bolehkah bolehlah buat bukan bukankah bukanlah bukannya cuma dahulu dalam dan dapat dari "
        "daripada dekat demi demikian demikianlah dengan depan di dia dialah diantara diantaranya "
        "dikarenakan dini diri dirinya disini disinilah dong dulu enggak enggaknya entah entahlah hal "
        "hampir hanya hanyalah harus haruslah harusnya hendak hendaklah hendaknya hingga ia ialah ibarat "
        "ingin inginkah inginkan ini inikah inilah itu itukah itulah jangan jangankan janganlah jika "
        "jikalau juga justru kala kalau kalaulah kalaupun kalian kami kamilah kamu kamulah kan kapan "
        "kapankah kapanpun karena karenanya ke kecil kemudian kenapa kepada kepadanya ketika khususnya "
        "kini kinilah kiranya kita kitalah kok lagi lagian lah lain lainnya lalu lama lamanya lebih macam "
        "maka makanya makin malah malahan mampu mampukah mana manakala manalagi masih masihkah masing mau "
        "maupun melainkan melalui memang mengapa mereka merekalah merupakan meski meskipun mungkin "
        "mungkinkah nah namun nanti nantinya nyaris oleh olehnya pada padahal padanya paling pantas para "
        "pasti pastilah per percuma pernah pula pun rupanya saat saatnya saja sajalah saling sama sambil "
        "sampai sana sangat sangatlah saya sayalah se sebab sebabnya sebagai sebagaimana sebagainya "
        "sebaliknya sebanyak sebegini sebegitu sebelum sebelumnya sebenarnya seberapa sebetulnya "
        "sebisanya sebuah sedang sedangkan sedemikian sedikit sedikitnya segala segalanya segera "
        "seharusnya sehingga sejak sejenak sekali sekalian sekaligus sekalipun sekarang seketika "
        "sekiranya sekitar sekitarnya sela selagi selain selaku selalu selama selamanya seluruh "
        "seluruhnya semacam semakin semasih semaunya sementara sempat semua semuanya semula sendiri "
        "sendirinya seolah seorang sepanjang sepantasnya sepantasnyalah seperti sepertinya sering "
        "seringnya serta serupa sesaat sesama sesegera sesekali seseorang sesuatu sesuatunya sesudah "
        "sesudahnya setelah seterusnya setiap setidaknya sewaktu siapa siapakah siapapun sini sinilah "
        "suatu sudah sudahkah sudahlah supaya tadi tadinya tak tanpa tapi telah tentang tentu tentulah "
        "tentunya terdiri terhadap terhadapnya terlalu terlebih tersebut tersebutlah tertentu tetapi tiap "
        "tidak tidakkah tidaklah toh waduh wah wahai walau walaupun wong yaitu yakni yang"
    ),
    # ItalianAnalyzer, 279 words
    "it": (
        "a abbia abbiamo abbiano abbiate ad agl agli ai al all alla alle allo anche avemmo avendo avesse "
        "avessero avessi avessimo aveste avesti avete aveva avevamo avevano avevate avevi avevo avrai "
        "avranno avrebbe avrebbero avrei avremmo avremo avreste avresti avrete avrà avrò avuta avute "
        "avuti avuto c che chi ci coi col come con contro cui da dagl dagli dai dal dall dalla dalle "
        "dallo degl degli dei del dell della delle dello di dov dove e ebbe ebbero ebbi ed era erano "
        "eravamo eravate eri ero essendo faccia facciamo facciano facciate faccio facemmo facendo facesse "
        "facessero facessi facessimo faceste facesti faceva facevamo facevano facevate facevi facevo fai "
        "fanno farai faranno farebbe farebbero farei faremmo faremo fareste faresti farete farà farò fece "
        "fecero feci fosse fossero fossi fossimo foste fosti fu fui fummo furono gli ha hai hanno ho i il "
        "in io l la le lei li lo loro lui ma mi mia mie miei mio ne negl negli nei nel nell nella nelle "
        "nello noi non nostra nostre nostri nostro o per perché più quale quanta quante quanti quanto "
        "quella quelle quelli quello questa queste questi questo sarai saranno sarebbe sarebbero sarei "
        "saremmo saremo sareste saresti sarete sarà sarò se sei si sia siamo siano siate siete sono sta "
        "stai stando stanno starai staranno starebbe starebbero starei staremmo staremo stareste staresti "
        "starete starà starò stava stavamo stavano stavate stavi stavo stemmo stesse stessero stessi "
        "stessimo steste stesti stette stettero stetti stia stiamo stiano stiate sto su sua sue sugl "
        "sugli sui sul sull sulla sulle sullo suo suoi ti tra tu tua tue tuo tuoi tutti tutto un una uno "
        "vi voi vostra vostre vostri vostro è"
    ),
    # LithuanianAnalyzer, 125 words
    "lt": (
        "ant apie ar arba aš be bei bet bus buvo būti būtų dėl gali iki ir iš ja jai jais jam jame jas "
        "jei ji jie jiedu jiedvi jiedviem jiedviese jiems jis jo jodviem jog joje jomis joms jos jose "
        "judu judvi judviejų judviem judviese jumis jums jumyse juo juodu juodviese juos juose jus ją jį "
        "jūs jūsų jų jųdviejų kad kai kaip kas kiek kol kur kurie kuris ką man mane manimi mano manyje "
        "manęs mes metu mudu mudvi mudviejų mudviem mudviese mumis mums mumyse mus mūsų nei nes net nors "
        "nuo o pat per po prie prieš sau save savimi savo savyje savęs su tada tai taip tas tau tave "
        "tavimi tavyje tavęs tačiau ten to todėl tu tuo už visi yra į"
    ),
    # LatvianAnalyzer, 161 words
    "lv": (
        "aiz ap apakš apakšpus ar arī augšpus bet bez bija biji biju bijām bijāt būs būsi būsiet būsim "
        "būt būšu caur diemžēl diezin droši dēļ esam esat esi esmu gan gar iekam iekams iekām iekāms iekš "
        "iekšpus ik ir it itin iz ja jau jeb jebšu jel jo jā ka kamēr kaut kolīdz kopš kā kļuva kļuvi "
        "kļuvu kļuvām kļuvāt kļūs kļūsi kļūsiet kļūsim kļūst kļūstam kļūstat kļūsti kļūstu kļūt kļūšu "
        "labad lai lejpus līdz līdzko ne nebūt nedz nekā nevis nezin no nu nē otrpus pa par pat pie pirms "
        "pret priekš pār pēc starp tad tak tapi taps tapsi tapsiet tapsim tapt tapāt tapšu taču te tiec "
        "tiek tiekam tiekat tieku tik tika tikai tiki tikko tiklab tiklīdz tiks tiksiet tiksim tikt tiku "
        "tikvien tikām tikāt tikšu tomēr topat turpretim turpretī tā tādēļ tālab tāpēc un uz vai var "
        "varat varēja varēji varēju varējām varējāt varēs varēsi varēsiet varēsim varēt varēšu vien virs "
        "virspus vis viņpus zem ārpus šaipus"
    ),
    # DutchAnalyzer, 101 words
    "nl": (
        "aan al alles als altijd andere ben bij daar dan dat de der deze die dit doch doen door dus een "
        "eens en er ge geen geweest haar had heb hebben heeft hem het hier hij hoe hun iemand iets ik in "
        "is ja je kan kon kunnen maar me meer men met mij mijn moet na naar niet niets nog nu of om omdat "
        "onder ons ook op over reeds te tegen toch toen tot u uit uw van veel voor want waren was wat "
        "werd wezen wie wil worden wordt zal ze zelf zich zij zijn zo zonder zou"
    ),
    # NorwegianAnalyzer, 172 words
    "no": (
        "alle at av bare begge ble blei bli blir blitt både båe da de deg dei deim deira deires dem den "
        "denne der dere deres det dette di din disse ditt du dykk dykkar då eg ein eit eitt eller elles "
        "en enn er et ett etter for fordi fra før ha hadde han hans har hennar henne hennes her hjå ho "
        "hoe honom hoss hossen hun hva hvem hver hvilke hvilken hvis hvor hvordan hvorfor i ikke ikkje "
        "ingen ingi inkje inn inni ja jeg kan kom korleis korso kun kunne kva kvar kvarhelst kven kvi "
        "kvifor man mange me med medan meg meget mellom men mi min mine mitt mot mykje ned no noe noen "
        "noka noko nokon nokor nokre nå når og også om opp oss over på samme seg selv si sia sidan siden "
        "sin sine sitt sjøl skal skulle slik so som somme somt så sånn til um upp ut uten var vart varte "
        "ved vere verte vi vil ville vore vors vort vår være vært å"
    ),
    # PolishAnalyzer, 181 words
    "pl": (
        "aby albo ale ani aż bardzo bez bo bowiem by byli bym być był była było były będzie będą chce "
        "choć co coraz coś czy czyli często dla do dr gdy gdyby gdyż gdzie go godz hab i ich ii iii im "
        "inne inż iv ix iż ja jak jakie jako je jednak jednym jedynie jego jej jest jeszcze jeśli jeżeli "
        "już ją kiedy kilku kto która które którego której który których którym którzy lat lecz lub ma "
        "mają mamy mgr mi miał mimo mnie mogą może można mu musi na nad nam nas nawet nic nich nie niej "
        "nim niż no nowe np nr o od ok on one oraz pan pl po pod ponad ponieważ poza prof przed przede "
        "przez przy raz razie roku również się sobie sposób swoje są ta tak takich takie także tam te "
        "tego tej tel temu ten teraz też to trzeba tu tych tylko tym tys tzw tę u ul vi vii viii vol w we "
        "wie więc wszystko www właśnie wśród xi xii xiii xiv xv z za zaś ze zł że żeby"
    ),
    # PortugueseAnalyzer, 203 words
    "pt": (
        "a ao aos aquela aquelas aquele aqueles aquilo as até com como da das de dela delas dele deles "
        "depois do dos e ela elas ele eles em entre era eram essa essas esse esses esta estamos estas "
        "estava estavam este esteja estejam estejamos estes esteve estive estivemos estiver estivera "
        "estiveram estiverem estivermos estivesse estivessem estivéramos estivéssemos estou está "
        "estávamos estão eu foi fomos for fora foram forem formos fosse fossem fui fôramos fôssemos haja "
        "hajam hajamos havemos hei houve houvemos houver houvera houveram houverei houverem houveremos "
        "houveria houveriam houvermos houverá houverão houveríamos houvesse houvessem houvéramos "
        "houvéssemos há hão isso isto já lhe lhes mais mas me mesmo meu meus minha minhas muito na nas "
        "nem no nos nossa nossas nosso nossos num numa não nós o os ou para pela pelas pelo pelos por "
        "qual quando que quem se seja sejam sejamos sem serei seremos seria seriam será serão seríamos "
        "seu seus somos sou sua suas são só também te tem temos tenha tenham tenhamos tenho terei teremos "
        "teria teriam terá terão teríamos teu teus teve tinha tinham tive tivemos tiver tivera tiveram "
        "tiverem tivermos tivesse tivessem tivéramos tivéssemos tu tua tuas tém tínhamos um uma você "
        "vocês vos à às éramos"
    ),
    # RomanianAnalyzer, 230 words
    "ro": (
        "acea aceasta această aceea acei aceia acel acela acele acelea acest acesta aceste acestea aceşti "
        "aceştia acolo acum ai aia aibă aici al ale alea altceva altcineva am ar are asemenea asta astea "
        "astăzi asupra au avea avem aveţi azi aş aşadar aţi bine bucur bună ca care ce cel ceva chiar "
        "cine cineva contra cu cum cumva curând curînd când cât câte câtva câţi cînd cît cîte cîtva cîţi "
        "că căci cărei căror cărui către da dacă dar datorită de deci deja deoarece departe deşi din "
        "dinaintea dintr dintre drept după dă ea ei el ele eram este eu eşti face fi fie fiecare fii fim "
        "fiţi fără iar ieri la le li lor lui lângă lîngă mea mei mele mereu meu mi mine mult multă mulţi "
        "mâine mă ne nici nicăieri nimeni nişte noastre noastră noi nostru noştri nu ori oricare orice "
        "oricine oricum oricând oricât oricînd oricît oriunde pe pentru peste poate pot prea prima primul "
        "prin printr până pînă sa sale sau se spre sub sunt suntem sunteţi sînt sîntem sînteţi să săi său "
        "ta tale te tine toate toată tot totuşi toţi tu tăi tău un una unde undeva unei unele uneori unor "
        "vi voastre voastră voi vostru vouă voştri vreo vreun vă îi îl îmi împotriva în înainte înaintea "
        "încotro încât încît între întrucât întrucît îţi ăla ălea ăsta ăstea ăştia şi ţi ţie"
    ),
    # RussianAnalyzer, 159 words
    "ru": (
        "а без более больше будет будто бы был была были было быть в вам вас вдруг ведь во вот впрочем "
        "все всегда всего всех всю вы где говорил да даже два для до другой его ее ей ему если есть еще ж "
        "же жизнь за зачем здесь и из или им иногда их к кажется как какая какой когда конечно кто куда "
        "ли лучше между меня мне много может можно мой моя мы на над надо наконец нас не него нее ней "
        "нельзя нет ни нибудь никогда ним них ничего но ну о об один он она они опять от перед по под "
        "после потом потому почти при про раз разве с сам свою себе себя сегодня сейчас сказал сказала "
        "сказать со совсем так такой там тебя тем теперь то тогда того тоже только том тот три тут ты у "
        "уж уже хорошо хоть чего человек чем через что чтоб чтобы чуть эти этого этой этом этот эту я"
    ),
    # SwedishAnalyzer, 114 words
    "sv": (
        "alla allt att av blev bli blir blivit de dem den denna deras dess dessa det detta dig din dina "
        "ditt du där då efter ej eller en er era ert ett från för ha hade han hans har henne hennes hon "
        "honom hur här i icke ingen inom inte jag ju kan kunde man med mellan men mig min mina mitt mot "
        "mycket ni nu när någon något några och om oss på samma sedan sig sin sina sitta själv skulle som "
        "så sådan sådana sådant till under upp ut utan vad var vara varför varit varje vars vart vem vi "
        "vid vilka vilkas vilken vilket vår våra vårt än är åt över"
    ),
    # TurkishAnalyzer, 209 words
    "tr": (
        "acaba altmış altı ama ancak arada aslında ayrıca bana bazı belki ben benden beni benim beri beş "
        "bile bin bir biri birkaç birkez birçok birşey birşeyi biz bizden bize bizi bizim bu buna bunda "
        "bundan bunlar bunları bunların bunu bunun burada böyle böylece da daha dahi de defa değil diye "
        "diğer doksan dokuz dolayı dolayısıyla dört edecek eden ederek edilecek ediliyor edilmesi ediyor "
        "elli en etmesi etti ettiği ettiğini eğer gibi göre halen hangi hatta hem henüz hep hepsi her "
        "herhangi herkesin hiç hiçbir iki ile ilgili ise itibaren itibariyle için işte kadar karşın "
        "katrilyon kendi kendilerine kendini kendisi kendisine kendisini kez ki kim kimden kime kimi "
        "kimse kırk milyar milyon mu mü mı nasıl ne neden nedenle nerde nerede nereye niye niçin o olan "
        "olarak oldu olduklarını olduğu olduğunu olmadı olmadığı olmak olması olmayan olmaz olsa olsun "
        "olup olur olursa oluyor on ona ondan onlar onlardan onları onların onu onun otuz oysa pek rağmen "
        "sadece sanki sekiz seksen sen senden seni senin siz sizden sizi sizin tarafından trilyon tüm var "
        "vardı ve veya ya yani yapacak yapmak yaptı yaptıkları yaptığı yaptığını yapılan yapılması "
        "yapıyor yedi yerine yetmiş yine yirmi yoksa yüz zaten çok çünkü öyle üzere üç şey şeyden şeyi "
        "şeyler şu şuna şunda şundan şunları şunu şöyle"
    ),
}

STOPWORDS: dict[str, tuple[str, ...]] = {lang: tuple(words.split()) for lang, words in _LISTS.items()}
